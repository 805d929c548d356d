package store

import (
	"context"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"
)

// NoTrialError says that a store holds no analysis of a trial.
type NoTrialError struct{ Trial string }

func (e *NoTrialError) Error() string { return fmt.Sprintf("no trial %q in the store", e.Trial) }

// Promote makes a trial's analyses current for their job attempts, in one transaction, and
// removes the trial; it returns how many attempts it changed hands for. The analyses the trial
// replaces stay in the store (a later trial of the old rules can bring them back).
func (s *Store) Promote(ctx context.Context, trial string) (int, error) {
	if err := s.checkSchema(ctx); err != nil {
		return 0, err
	}
	var n int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
INSERT INTO current_analyses (job_id, attempt, analysis_id)
SELECT job_id, attempt, analysis_id FROM trial_analyses WHERE trial = $1
ON CONFLICT (job_id, attempt) DO UPDATE SET analysis_id = EXCLUDED.analysis_id`, trial)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		if n == 0 {
			return &NoTrialError{Trial: trial}
		}
		_, err = tx.Exec(ctx, `DELETE FROM trial_analyses WHERE trial = $1`, trial)
		return err
	})
	if err != nil {
		if _, ok := err.(*NoTrialError); ok {
			return 0, err
		}
		return 0, fmt.Errorf("store %s: promoting %s: %w", s.where, trial, err)
	}
	return int(n), nil
}

// TrialComparison sets a trial beside the current analyses of the same job attempts.
type TrialComparison struct {
	Trial string `json:"trial"`
	// Attempts are the job attempts the trial analyzed; Changed those whose outcome (cause,
	// or verdict when there is none) differs from the current analysis's.
	Attempts int `json:"attempts"`
	Changed  int `json:"changed"`
	// Causes counts each outcome in the current analyses and in the trial, over the same
	// attempts, most frequent first.
	Causes []TrialCause `json:"causes"`
	// Changes counts each change of outcome, most frequent first.
	Changes []TrialChange `json:"changes"`
}

// TrialCause is one outcome's count, current and in the trial. An outcome is a failure's
// root-cause category ("unknown" when the rules named none), or "(healthy)", "(unknown
// verdict)", or "(none)" for an attempt without a current analysis.
type TrialCause struct {
	Outcome string `json:"outcome"`
	Current int    `json:"current"`
	Trial   int    `json:"trial"`
}

// TrialChange is a change of outcome from the current analysis to the trial's.
type TrialChange struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Count int    `json:"count"`
}

// outcomeSQL names an analysis's outcome (a, LEFT JOINed: NULL is "(none)").
const outcomeSQL = `CASE WHEN %[1]s.id IS NULL THEN '(none)'
	WHEN %[1]s.verdict = 'unhealthy' THEN coalesce(%[1]s.category, 'unknown')
	WHEN %[1]s.verdict = 'healthy' THEN '(healthy)' ELSE '(unknown verdict)' END`

// CompareTrial compares a trial with the current analyses of the attempts it analyzed.
func (s *Store) CompareTrial(ctx context.Context, trial string) (*TrialComparison, error) {
	if err := s.checkSchema(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
SELECT `+fmt.Sprintf(outcomeSQL, "ca")+`, `+fmt.Sprintf(outcomeSQL, "ta")+`, count(*)
FROM trial_analyses t
JOIN analyses ta ON ta.id = t.analysis_id
LEFT JOIN current_analyses c ON c.job_id = t.job_id AND c.attempt = t.attempt
LEFT JOIN analyses ca ON ca.id = c.analysis_id
WHERE t.trial = $1
GROUP BY 1, 2`, trial)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", s.where, err)
	}
	c := &TrialComparison{Trial: trial, Causes: []TrialCause{}, Changes: []TrialChange{}}
	counts := map[string]*TrialCause{}
	cause := func(o string) *TrialCause {
		if counts[o] == nil {
			counts[o] = &TrialCause{Outcome: o}
		}
		return counts[o]
	}
	for rows.Next() {
		var from, to string
		var n int
		if err := rows.Scan(&from, &to, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store %s: %w", s.where, err)
		}
		c.Attempts += n
		if from != "(none)" {
			cause(from).Current += n
		}
		cause(to).Trial += n
		if from != to {
			c.Changed += n
			c.Changes = append(c.Changes, TrialChange{From: from, To: to, Count: n})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store %s: %w", s.where, err)
	}
	if c.Attempts == 0 {
		return nil, &NoTrialError{Trial: trial}
	}
	for _, tc := range counts {
		c.Causes = append(c.Causes, *tc)
	}
	sort.Slice(c.Causes, func(i, j int) bool {
		a, b := c.Causes[i], c.Causes[j]
		if a.Current+a.Trial != b.Current+b.Trial {
			return a.Current+a.Trial > b.Current+b.Trial
		}
		return a.Outcome < b.Outcome
	})
	sort.Slice(c.Changes, func(i, j int) bool {
		a, b := c.Changes[i], c.Changes[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.From+"\x00"+a.To < b.From+"\x00"+b.To
	})
	return c, nil
}
