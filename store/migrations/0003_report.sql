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

-- fleet_retries: each failed attempt with what its retry lineage (fleet_lineage) did next:
-- succeeded, failed again of the same cause, failed otherwise, or not retried (yet). A
-- transient cause that fails again of the same cause is a retry that did not help; a permanent
-- cause retried is a retry that could not.
CREATE VIEW fleet_retries AS
SELECT l.at, l.cluster, l.namespace, l.lineage, l.name, l.uid, l.attempt, l.run,
       coalesce(l.category, 'unknown') AS category, coalesce(l.retry, 'unknown') AS retry,
       l.next_verdict, l.next_category,
       CASE WHEN l.next_verdict IS NULL THEN 'not retried'
            WHEN l.next_verdict = 'healthy' THEN 'succeeded'
            WHEN l.next_verdict = 'unhealthy' AND l.next_category IS NOT DISTINCT FROM l.category THEN 'failed again'
            WHEN l.next_verdict = 'unhealthy' THEN 'failed otherwise'
            ELSE 'unknown' END AS outcome
FROM fleet_lineage l
WHERE l.verdict = 'unhealthy';

-- fleet_diagnosis_delays: for each interruption, the time from the failure to its first
-- diagnosis, in seconds (never below zero: clocks of a cluster and a watcher disagree).
CREATE VIEW fleet_diagnosis_delays AS
SELECT i.at, i.analysis_id, i.cluster, i.namespace, i.name, i.cause, i.failed_at, i.diagnosed_at,
       greatest(extract(epoch FROM i.diagnosed_at - i.failed_at), 0)::double precision AS seconds
FROM fleet_interruptions i
WHERE i.failed_at IS NOT NULL;
