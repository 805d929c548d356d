package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Put writes an analysis in one transaction: its job (inserted or updated), the analysis keyed
// by (bundle digest, coroner version, rules version) with its findings, pods and nodes
// (replaced when the key exists: a second Put of the same analysis changes nothing), and makes
// it its job attempt's current analysis unless that one was analyzed later. So collecting the
// same failure twice, re-analyzing it, or replaying a queue never counts a failure twice.
func (s *Store) Put(ctx context.Context, a *Analysis) error { return s.put(ctx, a, "") }

// PutTrial writes an analysis as Put does, but as its job attempt's analysis in the named
// trial (the last written), beside the current one and never in its place: the views do not
// count it until Promote.
func (s *Store) PutTrial(ctx context.Context, trial string, a *Analysis) error {
	if trial == "" {
		return errors.New("store: a trial needs a name")
	}
	return s.put(ctx, a, trial)
}

func (s *Store) put(ctx context.Context, a *Analysis, trial string) error {
	if a == nil || a.BundleDigest == "" || a.Job.UID == "" {
		return errors.New("store: an analysis without a bundle digest or a job")
	}
	if err := s.checkSchema(ctx); err != nil {
		return err
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		j := a.Job
		var jobID int64
		err := tx.QueryRow(ctx, `
INSERT INTO jobs (cluster, uid, api_version, kind, namespace, name, owner_kind, owner_name, created_at, world_size, gpus, images)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (cluster, uid) DO UPDATE SET api_version = EXCLUDED.api_version, kind = EXCLUDED.kind,
	namespace = EXCLUDED.namespace, name = EXCLUDED.name, owner_kind = EXCLUDED.owner_kind, owner_name = EXCLUDED.owner_name,
	created_at = EXCLUDED.created_at, world_size = EXCLUDED.world_size, gpus = EXCLUDED.gpus, images = EXCLUDED.images
RETURNING id`,
			j.Cluster, j.UID, j.APIVersion, j.Kind, j.Namespace, j.Name, j.OwnerKind, j.OwnerName, j.Created, j.WorldSize, j.GPUs, nonNil(j.Images),
		).Scan(&jobID)
		if err != nil {
			return fmt.Errorf("writing the job: %w", err)
		}
		r := a.Root
		if r == nil {
			r = &Root{}
		}
		var id int64
		err = tx.QueryRow(ctx, `
INSERT INTO analyses (job_id, attempt, bundle_digest, coroner_version, rules_version, bundle_uri, collected_at, analyzed_at,
	failed_at, status, verdict, verdict_reason, category, rule_id, title, confidence, fault, retry, pod, container, rank, node,
	exit_code, gpu_hours_used, gpu_hours_lost)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, nullif($13, ''), nullif($14, ''), nullif($15, ''), nullif($16, ''),
	nullif($17, ''), nullif($18, ''), nullif($19, ''), nullif($20, ''), $21, nullif($22, ''), $23, $24, $25)
ON CONFLICT (bundle_digest, coroner_version, rules_version) DO UPDATE SET job_id = EXCLUDED.job_id, attempt = EXCLUDED.attempt,
	bundle_uri = EXCLUDED.bundle_uri, collected_at = EXCLUDED.collected_at, analyzed_at = EXCLUDED.analyzed_at,
	failed_at = EXCLUDED.failed_at, status = EXCLUDED.status, verdict = EXCLUDED.verdict, verdict_reason = EXCLUDED.verdict_reason,
	category = EXCLUDED.category, rule_id = EXCLUDED.rule_id, title = EXCLUDED.title, confidence = EXCLUDED.confidence,
	fault = EXCLUDED.fault, retry = EXCLUDED.retry, pod = EXCLUDED.pod, container = EXCLUDED.container, rank = EXCLUDED.rank,
	node = EXCLUDED.node, exit_code = EXCLUDED.exit_code, gpu_hours_used = EXCLUDED.gpu_hours_used, gpu_hours_lost = EXCLUDED.gpu_hours_lost
RETURNING id`,
			jobID, a.Attempt, a.BundleDigest, a.CoronerVersion, a.RulesVersion, a.BundleURI, a.CollectedAt, a.AnalyzedAt,
			a.FailedAt, a.Status, a.Verdict, a.VerdictReason, r.Category, r.RuleID, r.Title, r.Confidence, r.Fault, r.Retry,
			r.Pod, r.Container, r.Rank, r.Node, r.ExitCode, a.GPUHoursUsed, a.GPUHoursLost,
		).Scan(&id)
		if err != nil {
			return fmt.Errorf("writing the analysis: %w", err)
		}
		for _, table := range []string{"findings", "pods", "nodes"} {
			if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE analysis_id = $1`, id); err != nil {
				return fmt.Errorf("replacing the %s: %w", table, err)
			}
		}
		var rows [][]any
		for _, f := range a.Findings {
			rows = append(rows, []any{id, f.ID, f.RuleID, f.Category, f.Severity, f.Layer, f.Fault, f.Retry, f.Root, f.SecondaryOf,
				f.Title, f.Pod, f.Container, f.Node, f.Rank, f.First, f.Last, f.Count, f.Folded, max(1, f.Processes), f.Ranks})
		}
		if err := copyRows(ctx, tx, "findings", []string{"analysis_id", "finding_id", "rule_id", "category", "severity", "layer", "fault", "retry",
			"root", "secondary_of", "title", "pod", "container", "node", "rank", "first_at", "last_at", "count", "folded", "processes", "ranks"}, rows); err != nil {
			return err
		}
		rows = rows[:0]
		for _, p := range a.Pods {
			rows = append(rows, []any{id, p.Name, p.Role, p.Node, p.Rank, p.GPUs, p.Phase, p.Restarts, p.ExitCode, p.Created, p.Started,
				p.Finished, p.LastProgress, p.GPUHoursUsed, p.GPUHoursLost})
		}
		if err := copyRows(ctx, tx, "pods", []string{"analysis_id", "pod", "role", "node", "rank", "gpus", "phase", "restarts", "exit_code",
			"created_at", "started_at", "finished_at", "last_progress", "gpu_hours_used", "gpu_hours_lost"}, rows); err != nil {
			return err
		}
		rows = rows[:0]
		for _, n := range a.Nodes {
			labels, err := json.Marshal(nonNilMap(n.Labels))
			if err != nil {
				return err
			}
			rows = append(rows, []any{id, n.Name, n.GPUProduct, n.GPUCount, n.DriverVersion, string(labels), nonNilSlice(n.Agents), n.Attributed})
		}
		if err := copyRows(ctx, tx, "nodes", []string{"analysis_id", "node", "gpu_product", "gpu_count", "driver_version", "labels", "agents", "attributed"}, rows); err != nil {
			return err
		}
		if trial != "" {
			_, err = tx.Exec(ctx, `
INSERT INTO trial_analyses (trial, job_id, attempt, analysis_id) VALUES ($1, $2, $3, $4)
ON CONFLICT (trial, job_id, attempt) DO UPDATE SET analysis_id = EXCLUDED.analysis_id`, trial, jobID, a.Attempt, id)
			if err != nil {
				return fmt.Errorf("writing the trial's analysis: %w", err)
			}
			return nil
		}
		// An analysis that moved to another attempt (a re-Put with a corrected attempt) is
		// current there no more.
		if _, err := tx.Exec(ctx, `DELETE FROM current_analyses WHERE analysis_id = $1 AND (job_id, attempt) <> ($2, $3)`, id, jobID, a.Attempt); err != nil {
			return err
		}
		// The attempt's current analysis is the one analyzed last (ties: the later written).
		_, err = tx.Exec(ctx, `
INSERT INTO current_analyses (job_id, attempt, analysis_id) VALUES ($1, $2, $3)
ON CONFLICT (job_id, attempt) DO UPDATE SET analysis_id = EXCLUDED.analysis_id
WHERE (SELECT analyzed_at FROM analyses WHERE id = current_analyses.analysis_id) <= (SELECT analyzed_at FROM analyses WHERE id = EXCLUDED.analysis_id)`,
			jobID, a.Attempt, id)
		if err != nil {
			return fmt.Errorf("making the analysis current: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store %s: %w", s.where, err)
	}
	return nil
}

// copyRows inserts rows into table with COPY.
func copyRows(ctx context.Context, tx pgx.Tx, table string, cols []string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("writing the %s: %w", table, err)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func nonNilSlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
