-- The views the fleet report reads, documented in docs/fleet.md; `coroner fleet query VIEW`
-- prints them and Grafana can chart them. Every view counts current analyses only.

-- fleet_analyses: each job attempt's current analysis with its job; "at" is when the job failed
-- (else when it was collected, else analyzed): the time the report's periods filter on.
CREATE VIEW fleet_analyses AS
SELECT coalesce(a.failed_at, a.collected_at, a.analyzed_at) AS at, a.id AS analysis_id, j.cluster, j.namespace, j.name, j.kind, j.uid, j.owner_kind, j.owner_name,
       j.created_at AS job_created_at, j.world_size, j.gpus, j.images, a.attempt,
       a.bundle_uri, a.bundle_digest, a.coroner_version, a.rules_version,
       a.collected_at, a.analyzed_at, a.failed_at, a.status, a.verdict, a.verdict_reason,
       a.category, a.rule_id, a.title, a.confidence, a.fault, a.retry,
       a.pod, a.container, a.rank, a.node, a.exit_code, a.gpu_hours_used, a.gpu_hours_lost,
       (SELECT min(o.analyzed_at) FROM analyses o WHERE o.job_id = a.job_id AND o.attempt = a.attempt) AS diagnosed_at
FROM current_analyses c
JOIN analyses a ON a.id = c.analysis_id
JOIN jobs j ON j.id = c.job_id;

-- fleet_interruptions: the attempts that failed (verdict unhealthy), one row each, with the
-- week (Monday, UTC) of the failure and the cause's category and fault ("unknown" when none).
CREATE VIEW fleet_interruptions AS
SELECT f.*, coalesce(f.category, 'unknown') AS cause, coalesce(f.fault, 'unknown') AS cause_fault,
       date_trunc('week', f.at AT TIME ZONE 'UTC') AS week
FROM fleet_analyses f
WHERE f.verdict = 'unhealthy';

-- fleet_weekly: interruptions per week by cause and fault, with the GPU-hours they lost.
CREATE VIEW fleet_weekly AS
SELECT week, cause AS category, cause_fault AS fault, count(*) AS interruptions,
       sum(gpu_hours_lost) AS gpu_hours_lost
FROM fleet_interruptions
GROUP BY week, cause, cause_fault;

-- fleet_causes: the interruption table of all time: category, count, share, GPU-hours lost.
CREATE VIEW fleet_causes AS
SELECT cause AS category, count(*) AS interruptions,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS share_percent,
       sum(gpu_hours_lost) AS gpu_hours_lost
FROM fleet_interruptions
GROUP BY cause;

-- fleet_node_failures: per interruption and node, the hardware and collective findings that
-- name the node (a root cause without a node of its own takes its pod's), with the Xid code a
-- finding's title shows.
CREATE VIEW fleet_node_failures AS
SELECT i.at, i.analysis_id, i.cluster, coalesce(nullif(fi.node, ''), CASE WHEN fi.root THEN i.node END) AS node,
       i.cause, fi.category, fi.root,
       CASE WHEN fi.category = 'gpu-hardware' THEN 'hardware'
            WHEN fi.category IN ('collective-timeout', 'collective-error') THEN 'collective'
            ELSE 'cuda' END AS kind,
       (regexp_match(fi.title, '\mXid\M[^0-9]{0,12}([0-9]{1,3})'))[1] AS xid
FROM fleet_interruptions i
JOIN findings fi ON fi.analysis_id = i.analysis_id
WHERE fi.category IN ('gpu-hardware', 'collective-timeout', 'collective-error', 'cuda-error')
  AND coalesce(nullif(fi.node, ''), CASE WHEN fi.root THEN i.node END) IS NOT NULL;

-- fleet_lineage: each job attempt in its retry lineage (the same owner, else the same name, in a
-- namespace), in order, with the next run's outcome: a transient cause whose next run failed
-- again is a retry that did not help.
CREATE VIEW fleet_lineage AS
SELECT f.at, f.cluster, f.namespace, coalesce(nullif(f.owner_kind || '/' || f.owner_name, '/'), f.kind || '/' || f.name) AS lineage,
       f.name, f.uid, f.attempt, f.job_created_at, f.failed_at, f.verdict, f.category, f.retry,
       row_number() OVER w AS run,
       lead(f.verdict) OVER w AS next_verdict,
       lead(f.category) OVER w AS next_category
FROM fleet_analyses f
WINDOW w AS (PARTITION BY f.cluster, f.namespace, coalesce(nullif(f.owner_kind || '/' || f.owner_name, '/'), f.kind || '/' || f.name)
             ORDER BY f.job_created_at, f.uid, f.attempt);
