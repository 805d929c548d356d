package store

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Table is the result of a query: column names and each row's values as text (NULL: "").
type Table struct {
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
}

// Views lists the documented views (fleet_*) the store holds, sorted.
func (s *Store) Views(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT table_name FROM information_schema.views
		WHERE table_schema = current_schema() AND table_name LIKE 'fleet\_%' ORDER BY table_name`)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", s.where, err)
	}
	views, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", s.where, err)
	}
	return views, nil
}

// UnknownViewError names a view the store does not have, and those it has.
type UnknownViewError struct {
	View  string
	Views []string
}

func (e *UnknownViewError) Error() string {
	return fmt.Sprintf("no view %q (the views: %s)", e.View, strings.Join(e.Views, ", "))
}

// Query reads one of the documented views, ordered by its columns so that the same store
// gives the same table. A view with an "at" column (when the failure happened) keeps the rows
// from since on (zero: all); limit bounds the rows (0: all).
func (s *Store) Query(ctx context.Context, view string, since time.Time, limit int) (*Table, error) {
	views, err := s.Views(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(views, view) {
		return nil, &UnknownViewError{View: view, Views: views}
	}
	// The view's name is one of the store's own (checked above), never the caller's text.
	probe, err := s.pool.Query(ctx, `SELECT * FROM `+pgx.Identifier{view}.Sanitize()+` LIMIT 0`)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", s.where, err)
	}
	var cols []string
	for _, f := range probe.FieldDescriptions() {
		cols = append(cols, f.Name)
	}
	probe.Close()
	q := `SELECT * FROM ` + pgx.Identifier{view}.Sanitize()
	var args []any
	if !since.IsZero() && slices.Contains(cols, "at") {
		q += ` WHERE at >= $1`
		args = append(args, since)
	}
	order := make([]string, len(cols))
	for i := range cols {
		order[i] = strconv.Itoa(i + 1)
	}
	q += ` ORDER BY ` + strings.Join(order, ", ")
	if limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", s.where, err)
	}
	t := &Table{Columns: cols, Rows: [][]string{}}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("store %s: %w", s.where, err)
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = text(v)
		}
		t.Rows = append(t.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store %s: %w", s.where, err)
	}
	return t, nil
}

// text writes a value of a row as text: times in RFC 3339 (UTC), arrays with commas.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case time.Time:
		return v.UTC().Format(time.RFC3339)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = text(x)
		}
		return strings.Join(parts, ",")
	case map[string]any:
		data, _ := json.Marshal(v) // sorted keys
		return string(data)
	case []byte:
		return string(v)
	case driver.Valuer: // numeric
		if x, err := v.Value(); err == nil {
			return text(x)
		}
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprint(v)
}
