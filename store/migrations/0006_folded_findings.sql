-- Folded findings (report format version 2): the findings of one class on more than
-- report.FoldOver processes are one row that says how many findings and processes it stands for
-- and their ranks as ranges ("0-1,3-16383"); pod and rank are then empty, first_at and last_at
-- span them all. Rows written before, and rows of one process, have folded 0 and processes 1.
ALTER TABLE findings ADD COLUMN folded integer NOT NULL DEFAULT 0;
ALTER TABLE findings ADD COLUMN processes integer NOT NULL DEFAULT 1;
ALTER TABLE findings ADD COLUMN ranks text NOT NULL DEFAULT '';
