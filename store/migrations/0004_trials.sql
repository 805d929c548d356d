-- Trials: analyses made by other rules (coroner fleet reanalyze) kept beside the current ones,
-- one per job attempt and trial, never counted by the views until `coroner fleet promote`
-- makes them current.
CREATE TABLE trial_analyses (
    trial       text NOT NULL,
    job_id      bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt     integer NOT NULL,
    analysis_id bigint NOT NULL REFERENCES analyses (id) ON DELETE CASCADE,
    PRIMARY KEY (trial, job_id, attempt)
);
