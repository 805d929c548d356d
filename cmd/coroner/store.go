package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bucket"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/store"
)

// storeEnv holds the fleet store's address when --store is not given: the watch Deployment
// takes it from a Secret, so the password is in no command line.
const storeEnv = "CORONER_STORE"

// bundleStoreEnv holds watch's --bundle-store when it is not given: the Deployment takes it,
// with the object store's keys, from a Secret.
const bundleStoreEnv = "CORONER_BUNDLE_STORE"

// StoreOptions say where diagnoses are kept (the fleet store, docs/fleet.md).
type StoreOptions struct {
	// URL is the PostgreSQL address (postgres://... or key=value); "" keeps nothing.
	URL string
	// Cluster names the cluster the jobs ran in.
	Cluster string
	// BundleURI says where the bundle is kept ("" : the input's file:// URL).
	BundleURI string
	// Now is the clock of the analyses' time.
	Now func() time.Time
}

// addStoreFlags adds --store and --cluster-name; withEnv makes --store default to $CORONER_STORE.
func addStoreFlags(cmd *cobra.Command, o *StoreOptions, withEnv bool) {
	usage := "write each diagnosis to the fleet store at `URL` (postgres://user@host/db; the password from PGPASSWORD or ~/.pgpass)"
	if withEnv {
		addStoreURLFlag(cmd, &o.URL, usage)
	} else {
		cmd.Flags().StringVar(&o.URL, "store", "", usage)
	}
	cmd.Flags().StringVar(&o.Cluster, "cluster-name", "", "the cluster's `NAME` in the fleet store")
}

// addStoreURLFlag adds --store, by default $CORONER_STORE.
func addStoreURLFlag(cmd *cobra.Command, url *string, usage string) {
	*url = os.Getenv(storeEnv)
	cmd.Flags().StringVar(url, "store", *url, usage+" (default $"+storeEnv+")")
}

// openStore opens the store url names; "" is a usage error.
func openStore(ctx context.Context, url string) (*store.Store, error) {
	if url == "" {
		return nil, flagErrorf("no store: give --store URL or set $%s", storeEnv)
	}
	return store.Open(ctx, url)
}

// storeError words the store's errors for a user: which command fixes a schema.
func storeError(err error) error {
	var se *store.SchemaError
	if errors.As(err, &se) && se.Have < se.Want {
		return fmt.Errorf("%w: run '%s store migrate' first", err, commandName)
	}
	return err
}

// record writes a diagnosis to the store, made with rules.
func (o *StoreOptions) record(ctx context.Context, d *diagnose.Diagnosis, rules *analyze.RuleSet, input string) error {
	rv, err := store.RulesVersion(rules)
	if err != nil {
		return err
	}
	uri := o.BundleURI
	if uri == "" && bucket.IsURI(input) {
		uri = input
	} else if uri == "" && input != "" && input != "-" {
		if abs, err := filepath.Abs(input); err == nil {
			uri = "file://" + filepath.ToSlash(abs)
		}
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	a, err := store.FromDiagnosis(ctx, d, store.Meta{Cluster: o.Cluster, BundleURI: uri, RulesVersion: rv, AnalyzedAt: now()})
	if err != nil {
		return err
	}
	s, err := store.Open(ctx, o.URL)
	if err != nil {
		return err
	}
	defer s.Close()
	return storeError(s.Put(ctx, a))
}

// NewCmdStore builds `coroner store`.
func NewCmdStore(io *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Manage the fleet store (PostgreSQL) that keeps every diagnosis",
		Long: `The fleet store keeps every diagnosis of 'coroner analyze --store' and 'coroner watch --store'
in PostgreSQL, for 'coroner fleet report' and your own queries (docs/fleet.md).`,
	}
	var url string
	var to int
	migrate := &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the fleet store's schema",
		Long: `Apply the schema's versioned migrations that the store does not have yet, each in its own
transaction, under a lock so that two coroners never migrate at once. Run it once before the
first write and after each upgrade of coroner; it is safe to run again (it then does nothing).
A store whose schema is newer than this coroner knows is refused.`,
		Example: `  PGPASSWORD=... coroner store migrate --store postgres://coroner@db.example:5432/fleet`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := openStore(cmd.Context(), url)
			if err != nil {
				return err
			}
			defer s.Close()
			applied, err := s.Migrate(cmd.Context(), to)
			for _, m := range applied {
				fmt.Fprintf(io.Out, "applied %04d_%s\n", m.Version, m.Name)
			}
			if err != nil {
				return err
			}
			v, err := s.SchemaVersion(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(io.Out, "%s: schema version %d\n", s, v)
			return nil
		},
	}
	addStoreURLFlag(migrate, &url, "the fleet store's `URL` (postgres://user@host/db)")
	migrate.Flags().IntVar(&to, "to", 0, "migrate up to this `VERSION` only (0: the latest)")
	_ = migrate.Flags().MarkHidden("to")
	cmd.AddCommand(migrate)
	return cmd
}
