-- The views `coroner fleet report` reads beside those of 0002, documented in docs/fleet.md.
-- Each keeps one row per event with its "at", so that a report (or Grafana) counts any period.

-- The time a failure happened is what every period filters on.
CREATE INDEX analyses_by_at ON analyses ((coalesce(failed_at, collected_at, analyzed_at)));

-- fleet_runs_by: each job attempt's current analysis once per cluster, namespace, kind and
-- image (each image of the job once), with whether it failed: failure rates by any of them.
-- Healthy runs are in the store when the watcher records them (watch --on-success=all).
CREATE VIEW fleet_runs_by AS
SELECT f.at, d.dimension, d.value, f.verdict = 'unhealthy' AS failed, f.analysis_id,
       CASE WHEN f.verdict = 'unhealthy' THEN f.gpu_hours_lost ELSE 0 END AS gpu_hours_lost
FROM fleet_analyses f
CROSS JOIN LATERAL (
    SELECT 'cluster' AS dimension, f.cluster AS value
    UNION ALL SELECT 'namespace', f.namespace
    UNION ALL SELECT 'kind', f.kind
    UNION ALL SELECT DISTINCT 'image', i FROM unnest(f.images) AS i
) d;

-- A job's retry lineage (as fleet_lineage's): its controlling owner, else its kind and name.
CREATE INDEX jobs_by_lineage ON jobs (cluster, namespace,
    (coalesce(nullif(owner_kind || '/' || owner_name, '/'), kind || '/' || name)), created_at, uid);

-- fleet_retries: each failed attempt with what the next run of its retry lineage (as
-- fleet_lineage orders them) did: succeeded, failed again of the same cause, failed
-- otherwise, or not retried (yet). A transient cause that fails again of the same cause is a
-- retry that did not help; a permanent cause retried is a retry that could not. The next run
-- is looked up for each failure (jobs_by_lineage), so a period reads its own rows only.
CREATE VIEW fleet_retries AS
SELECT f.at, f.cluster, f.namespace, l.lineage, f.name, f.uid, f.attempt,
       coalesce(f.category, 'unknown') AS category, coalesce(f.retry, 'unknown') AS retry,
       n.verdict AS next_verdict, n.category AS next_category,
       CASE WHEN n.verdict IS NULL THEN 'not retried'
            WHEN n.verdict = 'healthy' THEN 'succeeded'
            WHEN n.verdict = 'unhealthy' AND n.category IS NOT DISTINCT FROM f.category THEN 'failed again'
            WHEN n.verdict = 'unhealthy' THEN 'failed otherwise'
            ELSE 'unknown' END AS outcome
FROM fleet_analyses f
CROSS JOIN LATERAL (SELECT coalesce(nullif(f.owner_kind || '/' || f.owner_name, '/'), f.kind || '/' || f.name) AS lineage) l
LEFT JOIN LATERAL (
    SELECT a.verdict, a.category
    FROM jobs j
    JOIN current_analyses c ON c.job_id = j.id
    JOIN analyses a ON a.id = c.analysis_id
    WHERE j.cluster = f.cluster AND j.namespace = f.namespace
      AND coalesce(nullif(j.owner_kind || '/' || j.owner_name, '/'), j.kind || '/' || j.name) = l.lineage
      AND (j.created_at, j.uid, c.attempt) > (f.job_created_at, f.uid, f.attempt)
    ORDER BY j.created_at, j.uid, c.attempt
    LIMIT 1
) n ON true
WHERE f.verdict = 'unhealthy';

-- fleet_diagnosis_delays: for each interruption, the time from the failure to its first
-- diagnosis, in seconds (never below zero: clocks of a cluster and a watcher disagree).
CREATE VIEW fleet_diagnosis_delays AS
SELECT i.at, i.analysis_id, i.cluster, i.namespace, i.name, i.cause, i.failed_at, i.diagnosed_at,
       greatest(extract(epoch FROM i.diagnosed_at - i.failed_at), 0)::double precision AS seconds
FROM fleet_interruptions i
WHERE i.failed_at IS NOT NULL;
