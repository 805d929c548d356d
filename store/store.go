// Package store is the fleet store: every diagnosis of a job as rows in PostgreSQL (the job,
// the verdict and root cause, the findings, pods and nodes, the GPU-hours used and lost), so
// that a platform team can ask what keeps killing its jobs. The schema is versioned SQL
// (migrations/*.sql, embedded) that Migrate applies; Put writes one Analysis (made from a
// diagnose.Diagnosis by FromDiagnosis) idempotently; a Queue keeps analyses on disk while
// the store cannot be reached.
package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is an open connection pool to the fleet store.
type Store struct {
	pool *pgxpool.Pool
	// where names the store in errors: the DSN without its password.
	where string
}

// Open connects to the PostgreSQL database dsn names (a postgres:// URL or a key=value
// string; the password may come from PGPASSWORD or ~/.pgpass instead) and checks that it
// answers. Errors name the store by RedactDSN(dsn): a password never reaches a log.
func Open(ctx context.Context, dsn string) (*Store, error) {
	s, err := New(dsn)
	if err != nil {
		return nil, err
	}
	if err := s.pool.Ping(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("store %s: %w", s.where, scrub(err, dsn))
	}
	return s, nil
}

// New is Open without the check: it connects when first used, so that a watcher starts while
// its store is down (its writes wait in a Queue).
func New(dsn string) (*Store, error) {
	where := RedactDSN(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store %s: the address does not parse", where)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", where, scrub(err, dsn))
	}
	return &Store{pool: pool, where: where}, nil
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// String names the store without its password.
func (s *Store) String() string { return s.where }

// RedactDSN is dsn with its password replaced by "xxxxx", in both forms a DSN takes.
func RedactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	// A key=value string, or a URL that does not parse: mask what follows "password=" and a
	// URL's user info.
	out := passwordKV.ReplaceAllString(dsn, "${1}xxxxx")
	return urlUserInfo.ReplaceAllString(out, "${1}:xxxxx@")
}

var (
	passwordKV  = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)`)
	urlUserInfo = regexp.MustCompile(`(://[^:/@]*):[^@]*@`)
)

// scrub removes dsn's password from err's text, should a driver ever quote it: the error
// keeps its message but not its chain.
func scrub(err error, dsn string) error {
	pw := password(dsn)
	if pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
}

func password(dsn string) string {
	if cfg, err := pgconn.ParseConfig(dsn); err == nil {
		return cfg.Password
	}
	return ""
}

// tx runs fn in a transaction, committed when fn returns nil. The caller names the store in
// the error.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it is a no-op
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
