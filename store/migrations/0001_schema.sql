-- The fleet store: one row per job, one per analysis of a bundle, and which analysis of each
-- job attempt is current (the one the reports count). docs/fleet.md describes every column.

CREATE TABLE jobs (
    id          bigserial PRIMARY KEY,
    cluster     text NOT NULL,
    -- uid is the job object's uid; plain logs without a job are keyed "sha256:<bundle digest>".
    uid         text NOT NULL,
    api_version text NOT NULL DEFAULT '',
    kind        text NOT NULL,
    namespace   text NOT NULL DEFAULT '',
    name        text NOT NULL DEFAULT '',
    owner_kind  text NOT NULL DEFAULT '',
    owner_name  text NOT NULL DEFAULT '',
    created_at  timestamptz,
    world_size  integer NOT NULL DEFAULT 0,
    gpus        integer NOT NULL DEFAULT 0,
    images      text[] NOT NULL DEFAULT '{}',
    UNIQUE (cluster, uid)
);
-- Retry lineage: the same name (or owner) in a namespace, in creation order.
CREATE INDEX jobs_by_name ON jobs (cluster, namespace, name, created_at);
CREATE INDEX jobs_by_owner ON jobs (cluster, namespace, owner_kind, owner_name, created_at) WHERE owner_name <> '';

CREATE TABLE analyses (
    id              bigserial PRIMARY KEY,
    job_id          bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt         integer NOT NULL,
    bundle_digest   text NOT NULL,
    coroner_version text NOT NULL,
    rules_version   text NOT NULL,
    bundle_uri      text NOT NULL DEFAULT '',
    collected_at    timestamptz,
    analyzed_at     timestamptz NOT NULL,
    failed_at       timestamptz,
    status          text NOT NULL,
    verdict         text NOT NULL,
    verdict_reason  text NOT NULL,
    -- The root cause; category is NULL when there is none.
    category        text,
    rule_id         text,
    title           text,
    confidence      text,
    fault           text,
    retry           text,
    pod             text,
    container       text,
    rank            integer,
    node            text,
    exit_code       integer,
    gpu_hours_used  double precision NOT NULL DEFAULT 0,
    gpu_hours_lost  double precision NOT NULL DEFAULT 0,
    UNIQUE (bundle_digest, coroner_version, rules_version)
);
CREATE INDEX analyses_by_attempt ON analyses (job_id, attempt);
CREATE INDEX analyses_by_failure ON analyses (failed_at);

-- Exactly one current analysis per job attempt: the one analyzed last.
CREATE TABLE current_analyses (
    job_id      bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt     integer NOT NULL,
    analysis_id bigint NOT NULL UNIQUE REFERENCES analyses (id) ON DELETE CASCADE,
    PRIMARY KEY (job_id, attempt)
);

CREATE TABLE findings (
    analysis_id  bigint NOT NULL REFERENCES analyses (id) ON DELETE CASCADE,
    finding_id   text NOT NULL,
    rule_id      text NOT NULL,
    category     text NOT NULL,
    severity     text NOT NULL,
    layer        text NOT NULL,
    fault        text NOT NULL,
    retry        text NOT NULL,
    root         boolean NOT NULL,
    secondary_of text NOT NULL DEFAULT '',
    title        text NOT NULL DEFAULT '',
    pod          text NOT NULL DEFAULT '',
    container    text NOT NULL DEFAULT '',
    node         text NOT NULL DEFAULT '',
    rank         integer,
    first_at     timestamptz,
    last_at      timestamptz,
    count        integer NOT NULL,
    PRIMARY KEY (analysis_id, finding_id)
);
CREATE INDEX findings_by_node ON findings (node, category) WHERE node <> '';

CREATE TABLE pods (
    analysis_id    bigint NOT NULL REFERENCES analyses (id) ON DELETE CASCADE,
    pod            text NOT NULL,
    role           text NOT NULL DEFAULT '',
    node           text NOT NULL DEFAULT '',
    rank           integer,
    gpus           integer NOT NULL DEFAULT 0,
    phase          text NOT NULL DEFAULT '',
    restarts       integer NOT NULL DEFAULT 0,
    exit_code      integer,
    created_at     timestamptz,
    started_at     timestamptz,
    finished_at    timestamptz,
    last_progress  timestamptz,
    gpu_hours_used double precision NOT NULL DEFAULT 0,
    gpu_hours_lost double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (analysis_id, pod)
);
CREATE INDEX pods_by_node ON pods (node) WHERE node <> '';

CREATE TABLE nodes (
    analysis_id    bigint NOT NULL REFERENCES analyses (id) ON DELETE CASCADE,
    node           text NOT NULL,
    gpu_product    text NOT NULL DEFAULT '',
    gpu_count      integer NOT NULL DEFAULT 0,
    driver_version text NOT NULL DEFAULT '',
    labels         jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (analysis_id, node)
);
