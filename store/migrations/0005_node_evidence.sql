-- Node evidence (docs/node-evidence.md): the GPU health agents a diagnosis saw on each node, and
-- whether it attributed the job's failure to that node's GPU with evidence whose time lines up.
-- The fleet report ranks nodes by failures attributed with node evidence and without.
ALTER TABLE nodes ADD COLUMN agents text[] NOT NULL DEFAULT '{}';
ALTER TABLE nodes ADD COLUMN attributed boolean NOT NULL DEFAULT false;
