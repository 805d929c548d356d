package store

import (
	"context"
	"embed"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one versioned step of the schema: migrations/NNNN_name.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations are the schema's steps in version order.
func Migrations() ([]Migration, error) {
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: not named NNNN_name.sql", e.Name())
		}
		data, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(data)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %04d_%s: versions must run 1, 2, 3... without gaps", m.Version, m.Name)
		}
	}
	return ms, nil
}

// migrateLock is the advisory lock that keeps two coroners from migrating at once.
const migrateLock = 0x636f726f6e6572 // "coroner"

// Migrate brings the schema up to version to (0: the latest), applying each missing step in
// its own transaction under an advisory lock, and returns the steps it applied. A schema newer
// than this coroner knows is an error: an older binary must not write into it.
func (s *Store) Migrate(ctx context.Context, to int) ([]Migration, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	if to <= 0 || to > len(ms) {
		to = len(ms)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", s.where, err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLock); err != nil {
		return nil, fmt.Errorf("store %s: %w", s.where, err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrateLock) //nolint:errcheck // the session ends soon anyway
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("store %s: %w", s.where, err)
	}
	var have int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return nil, fmt.Errorf("store %s: %w", s.where, err)
	}
	if have > len(ms) {
		return nil, &SchemaError{Where: s.where, Have: have, Want: len(ms)}
	}
	var applied []Migration
	for _, m := range ms[have:to] {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("store %s: migration %04d_%s: %w", s.where, m.Version, m.Name, err)
		}
		applied = append(applied, m)
	}
	return applied, nil
}

// SchemaVersion is the version of the store's schema (0: none yet).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	if err != nil && strings.Contains(err.Error(), "does not exist") {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store %s: %w", s.where, err)
	}
	return v, nil
}

// SchemaError says that the store's schema is not the version this coroner writes: Have below
// Want needs a migration, above it a newer coroner.
type SchemaError struct {
	Where      string
	Have, Want int
}

func (e *SchemaError) Error() string {
	if e.Have > e.Want {
		return fmt.Sprintf("store %s: its schema is at version %d, newer than this coroner knows (%d)", e.Where, e.Have, e.Want)
	}
	return fmt.Sprintf("store %s: its schema is at version %d, this coroner needs version %d", e.Where, e.Have, e.Want)
}

// checkSchema refuses to write into a store whose schema is not the one this coroner knows.
func (s *Store) checkSchema(ctx context.Context) error {
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	ms, err := Migrations()
	if err != nil {
		return err
	}
	if v != len(ms) {
		return &SchemaError{Where: s.where, Have: v, Want: len(ms)}
	}
	return nil
}
