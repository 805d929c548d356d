package store

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// FleetReport is what `coroner fleet report` shows of a period: every number of it counted
// by the views (docs/fleet.md) over the job attempts' current analyses whose failure (their
// "at") falls in [Since, Until). Its JSON is a documented contract.
type FleetReport struct {
	// Since is the period's start (nil: all the store holds); Until its end.
	Since *time.Time `json:"since,omitempty"`
	Until time.Time  `json:"until"`
	// Store names the store, without its password.
	Store string `json:"store"`

	Totals Totals `json:"totals"`
	// Weekly counts interruptions per week (Monday, UTC), cause and fault.
	Weekly []WeekCount `json:"weekly"`
	// Causes is the interruption table: categories by count.
	Causes []CauseCount `json:"causes"`
	// Nodes ranks the nodes named by hardware, collective and CUDA findings ("drain these").
	Nodes []NodeFailures `json:"nodes"`
	// FailureRates ranks clusters, namespaces, kinds and images by failures.
	FailureRates []FailureRate `json:"failureRates"`
	// Retries says what happened after each failure, by its cause's retry class.
	Retries []RetryOutcome `json:"retries"`
	// Diagnosis is the time from failures to their first diagnosis.
	Diagnosis DiagnosisDelay `json:"diagnosis"`
	// Trial, when asked for, compares a trial with the current analyses (CompareTrial).
	Trial *TrialComparison `json:"trial,omitempty"`
}

// Totals are the period's counts.
type Totals struct {
	// Runs are the job attempts analyzed; Interruptions those that failed (verdict
	// unhealthy); Unknown those the bundle could not tell.
	Runs          int     `json:"runs"`
	Interruptions int     `json:"interruptions"`
	Unknown       int     `json:"unknown"`
	GPUHoursUsed  float64 `json:"gpuHoursUsed"`
	GPUHoursLost  float64 `json:"gpuHoursLost"`
}

// WeekCount is one week's interruptions of one cause and fault.
type WeekCount struct {
	Week          time.Time `json:"week"`
	Category      string    `json:"category"`
	Fault         string    `json:"fault"`
	Interruptions int       `json:"interruptions"`
	GPUHoursLost  float64   `json:"gpuHoursLost"`
}

// CauseCount is one row of the interruption table.
type CauseCount struct {
	Category string `json:"category"`
	// Fault is the fault most of the category's interruptions name.
	Fault         string  `json:"fault"`
	Interruptions int     `json:"interruptions"`
	SharePercent  float64 `json:"sharePercent"`
	GPUHoursLost  float64 `json:"gpuHoursLost"`
}

// NodeFailures is one node's interruptions by kind of finding, with the Xid codes seen.
type NodeFailures struct {
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	// Hardware, Collective and CUDA count the interruptions with such a finding on the node.
	Hardware      int `json:"hardware"`
	Collective    int `json:"collective"`
	CUDA          int `json:"cuda"`
	Interruptions int `json:"interruptions"`
	// WithEvidence counts the interruptions attributed to the node's GPU with node evidence
	// whose time lines up (docs/node-evidence.md): the nodes to drain. The others are named by
	// their pods' errors alone.
	WithEvidence int `json:"withEvidence"`
	// Xids are the Xid codes the node's findings show, with their interruptions, most
	// first.
	Xids []XidCount `json:"xids"`
	Last time.Time  `json:"last"`
}

// XidCount is one Xid code of a node and the interruptions that show it.
type XidCount struct {
	Xid           string `json:"xid"`
	Interruptions int    `json:"interruptions"`
}

// FailureRate is the runs and failures of one cluster, namespace, kind or image.
type FailureRate struct {
	Dimension string  `json:"dimension"` // cluster, namespace, kind, image
	Value     string  `json:"value"`
	Runs      int     `json:"runs"`
	Failures  int     `json:"failures"`
	Rate      float64 `json:"rate"` // failures / runs, 0 to 1
	// GPUHoursLost sums the failures'.
	GPUHoursLost float64 `json:"gpuHoursLost"`
}

// RetryOutcome counts what followed the failures of one cause.
type RetryOutcome struct {
	Category string `json:"category"`
	Retry    string `json:"retry"` // transient, permanent, unknown
	Failures int    `json:"failures"`
	// The next run of the lineage: succeeded, failed again of the same cause, failed of
	// another, or none yet.
	Succeeded       int `json:"succeeded"`
	FailedAgain     int `json:"failedAgain"`
	FailedOtherwise int `json:"failedOtherwise"`
	NotRetried      int `json:"notRetried"`
}

// DiagnosisDelay is the time from failures to their first diagnosis, in whole seconds.
type DiagnosisDelay struct {
	Count         int     `json:"count"`
	MedianSeconds float64 `json:"medianSeconds"`
	P90Seconds    float64 `json:"p90Seconds"`
}

// ReportOptions bound a report.
type ReportOptions struct {
	Since, Until time.Time // zero Since: from the first failure on
	// Top bounds the nodes and each dimension's failure rates (0: 20).
	Top int
}

// Report counts a period of the fleet.
func (s *Store) Report(ctx context.Context, o ReportOptions) (*FleetReport, error) {
	if o.Top <= 0 {
		o.Top = 20
	}
	r := &FleetReport{Until: o.Until.UTC(), Store: s.where, Weekly: []WeekCount{}, Causes: []CauseCount{}, Nodes: []NodeFailures{},
		FailureRates: []FailureRate{}, Retries: []RetryOutcome{}}
	if !o.Since.IsZero() {
		since := o.Since.UTC()
		r.Since = &since
	}
	if err := s.checkSchema(ctx); err != nil {
		return nil, err
	}
	// The period: at >= $1 (NULL: from the start) AND at < $2; $3 is the top N, for the
	// queries that rank.
	var since *time.Time
	if !o.Since.IsZero() {
		since = &o.Since
	}
	type step struct {
		sql  string
		scan func(pgx.Rows) error
	}
	const in = ` at >= coalesce($1::timestamptz, '-infinity') AND at < $2 `
	steps := []step{
		{`SELECT count(*), count(*) FILTER (WHERE verdict = 'unhealthy'), count(*) FILTER (WHERE verdict = 'unknown'),
			coalesce(sum(gpu_hours_used), 0), coalesce(sum(gpu_hours_lost) FILTER (WHERE verdict = 'unhealthy'), 0)
		  FROM fleet_analyses WHERE` + in,
			func(rows pgx.Rows) error {
				t := &r.Totals
				return rows.Scan(&t.Runs, &t.Interruptions, &t.Unknown, &t.GPUHoursUsed, &t.GPUHoursLost)
			}},
		{`SELECT week AT TIME ZONE 'UTC', cause, cause_fault, count(*), sum(gpu_hours_lost)
		  FROM fleet_interruptions WHERE` + in + `GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
			func(rows pgx.Rows) error {
				var w WeekCount
				err := rows.Scan(&w.Week, &w.Category, &w.Fault, &w.Interruptions, &w.GPUHoursLost)
				w.Week = w.Week.UTC()
				r.Weekly = append(r.Weekly, w)
				return err
			}},
		{`SELECT cause, mode() WITHIN GROUP (ORDER BY cause_fault), count(*),
			round(100.0 * count(*) / sum(count(*)) OVER (), 1)::double precision, sum(gpu_hours_lost)
		  FROM fleet_interruptions WHERE` + in + `GROUP BY cause ORDER BY 3 DESC, 1`,
			func(rows pgx.Rows) error {
				var c CauseCount
				err := rows.Scan(&c.Category, &c.Fault, &c.Interruptions, &c.SharePercent, &c.GPUHoursLost)
				r.Causes = append(r.Causes, c)
				return err
			}},
		{`SELECT cluster, node,
			count(DISTINCT analysis_id) FILTER (WHERE kind = 'hardware'),
			count(DISTINCT analysis_id) FILTER (WHERE kind = 'collective'),
			count(DISTINCT analysis_id) FILTER (WHERE kind = 'cuda'),
			count(DISTINCT analysis_id), max(at), count(DISTINCT analysis_id) FILTER (WHERE attributed)
		  FROM (SELECT f.*, coalesce(n.attributed, false) AS attributed
		        FROM fleet_node_failures f LEFT JOIN nodes n USING (analysis_id, node)) fn
		  WHERE` + in + `GROUP BY cluster, node ORDER BY 3 DESC, 4 DESC, 5 DESC, 1, 2 LIMIT $3`,
			func(rows pgx.Rows) error {
				n := NodeFailures{Xids: []XidCount{}}
				err := rows.Scan(&n.Cluster, &n.Node, &n.Hardware, &n.Collective, &n.CUDA, &n.Interruptions, &n.Last, &n.WithEvidence)
				n.Last = n.Last.UTC()
				r.Nodes = append(r.Nodes, n)
				return err
			}},
		// The ranked nodes' Xid codes.
		{`SELECT cluster, node, xid, count(DISTINCT analysis_id) FROM fleet_node_failures
		  WHERE` + in + `AND xid IS NOT NULL GROUP BY cluster, node, xid ORDER BY 1, 2, 4 DESC, 3`,
			func(rows pgx.Rows) error {
				var cluster, node string
				var x XidCount
				if err := rows.Scan(&cluster, &node, &x.Xid, &x.Interruptions); err != nil {
					return err
				}
				for i := range r.Nodes {
					if n := &r.Nodes[i]; n.Cluster == cluster && n.Node == node {
						n.Xids = append(n.Xids, x)
					}
				}
				return nil
			}},
		{`SELECT dimension, value, runs, failures, failures::double precision / runs, lost FROM (
			SELECT dimension, value, count(*) AS runs, count(*) FILTER (WHERE failed) AS failures, sum(gpu_hours_lost) AS lost,
				row_number() OVER (PARTITION BY dimension ORDER BY count(*) FILTER (WHERE failed) DESC,
					count(*) FILTER (WHERE failed)::double precision / count(*) DESC, value) AS n
			FROM fleet_runs_by WHERE` + in + `GROUP BY dimension, value) ranked
		  WHERE n <= $3 ORDER BY array_position(ARRAY['cluster', 'namespace', 'kind', 'image'], dimension), n`,
			func(rows pgx.Rows) error {
				var f FailureRate
				err := rows.Scan(&f.Dimension, &f.Value, &f.Runs, &f.Failures, &f.Rate, &f.GPUHoursLost)
				r.FailureRates = append(r.FailureRates, f)
				return err
			}},
		{`SELECT category, retry, count(*),
			count(*) FILTER (WHERE outcome = 'succeeded'), count(*) FILTER (WHERE outcome = 'failed again'),
			count(*) FILTER (WHERE outcome = 'failed otherwise'), count(*) FILTER (WHERE outcome = 'not retried')
		  FROM fleet_retries WHERE` + in + `GROUP BY category, retry
		  ORDER BY array_position(ARRAY['transient', 'permanent'], retry), 3 DESC, 1`,
			func(rows pgx.Rows) error {
				var o RetryOutcome
				err := rows.Scan(&o.Category, &o.Retry, &o.Failures, &o.Succeeded, &o.FailedAgain, &o.FailedOtherwise, &o.NotRetried)
				r.Retries = append(r.Retries, o)
				return err
			}},
		{`SELECT count(*), coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds)), 0),
			coalesce(round(percentile_cont(0.9) WITHIN GROUP (ORDER BY seconds)), 0)
		  FROM fleet_diagnosis_delays WHERE` + in,
			func(rows pgx.Rows) error {
				d := &r.Diagnosis
				return rows.Scan(&d.Count, &d.MedianSeconds, &d.P90Seconds)
			}},
	}
	// One snapshot: every number of the report counts the same rows.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		for _, st := range steps {
			args := []any{since, o.Until}
			if strings.Contains(st.sql, "$3") {
				args = append(args, o.Top)
			}
			rows, err := tx.Query(ctx, st.sql, args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				if err := st.scan(rows); err != nil {
					rows.Close()
					return err
				}
			}
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store %s: the report: %w", s.where, err)
	}
	r.roundHours()
	return r, nil
}

// roundHours rounds the GPU-hour sums to a thousandth of an hour (3.6 s): PostgreSQL adds
// floats in whatever order its plan reads the rows, so the last digits of a sum differ from
// one query to the next, and the same store must give the same report bytes.
func (r *FleetReport) roundHours() {
	round := func(h *float64) { *h = math.Round(*h*1000) / 1000 }
	round(&r.Totals.GPUHoursUsed)
	round(&r.Totals.GPUHoursLost)
	for i := range r.Weekly {
		round(&r.Weekly[i].GPUHoursLost)
	}
	for i := range r.Causes {
		round(&r.Causes[i].GPUHoursLost)
	}
	for i := range r.FailureRates {
		round(&r.FailureRates[i].GPUHoursLost)
	}
}
