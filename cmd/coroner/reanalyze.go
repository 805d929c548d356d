package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bucket"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/store"
)

// indexEnv is the variable Kubernetes sets to each pod's index in an Indexed Job.
const indexEnv = "JOB_COMPLETION_INDEX"

// ReanalyzeOptions are those of `coroner fleet reanalyze`.
type ReanalyzeOptions struct {
	Store       string
	RulesDir    string
	Trial       string
	Shards      int
	Parallelism int
	BundleStore string
	// Manifest and apply.
	Namespace   string
	Image       string
	StoreSecret string
	S3Secret    string
	Output      string
	Apply       bool
	Kubeconfig  string
	Overrides   clientcmd.ConfigOverrides
	// Run this pod's shard.
	Run   bool
	Index int
	Now   func() time.Time
}

// trialName is what a trial may be called: a label value, so that it names the Job too.
var trialName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)

func newCmdFleetReanalyze(io *IOStreams) *cobra.Command {
	opts := &ReanalyzeOptions{Now: time.Now, Index: -1}
	cmd := &cobra.Command{
		Use:   "reanalyze --rules DIR --trial NAME --bundle-store s3://BUCKET/PREFIX",
		Short: "Re-analyze the bundles in object storage with other rules, as a trial, on a Kubernetes Indexed Job",
		Long: `Write a Kubernetes Indexed Job (with a ConfigMap of the rules in DIR) whose N pods each
re-analyze a shard of the bundles under --bundle-store, chosen by their JOB_COMPLETION_INDEX,
and write the results to the fleet store as the trial NAME: beside the current analyses, never
over them. 'coroner fleet report --trial NAME' compares the trial with the current view;
'coroner fleet promote NAME' makes it current. --apply creates the ConfigMap and the Job in the
cluster instead of printing them. The pods read the store's address and password from the
Secret --store-secret (keys store-url, store-password) and the object store's from
--s3-secret (AWS_* keys), as the watcher does (docs/fleet.md).

--run is what each pod runs: re-analyze the shard of index $JOB_COMPLETION_INDEX (or --index).`,
		Example: `  coroner fleet reanalyze --rules ./rules --trial xid-79 --shards 20 --bundle-store s3://bundles/fleet > trial.yaml
  coroner fleet reanalyze --rules ./rules --trial xid-79 --shards 20 --bundle-store s3://bundles/fleet --apply -n coroner
  JOB_COMPLETION_INDEX=3 coroner fleet reanalyze --run --rules ./rules --trial xid-79 --shards 20 --bundle-store s3://bundles/fleet`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReanalyze(cmd.Context(), opts, io)
		},
	}
	f := cmd.Flags()
	addStoreURLFlag(cmd, &opts.Store, "with --run: the fleet store's `URL`")
	f.StringVar(&opts.RulesDir, "rules", "", "the rules to try: the YAML files in `DIR` (added to the built-in ones, as analyze --rules)")
	f.StringVar(&opts.Trial, "trial", "", "the trial's `NAME` (lower case letters, digits and dashes)")
	f.IntVar(&opts.Shards, "shards", 1, "split the bundles into `N` shards, one pod each")
	f.IntVar(&opts.Parallelism, "parallelism", 0, "run at most `N` pods at once (0: all the shards)")
	f.StringVar(&opts.BundleStore, "bundle-store", "", "the bundles to re-analyze: `s3://BUCKET/PREFIX` (the watcher's --bundle-store)")
	f.StringVarP(&opts.Namespace, "namespace", "n", "coroner", "the `NAMESPACE` of the Job")
	f.StringVar(&opts.Image, "image", "ghcr.io/coroner-dev/coroner:"+imageTag(), "the coroner `IMAGE` the pods run")
	f.StringVar(&opts.StoreSecret, "store-secret", "coroner-fleet", "the `SECRET` with the store's store-url and store-password")
	f.StringVar(&opts.S3Secret, "s3-secret", "coroner-bundle-store", "the `SECRET` with the object store's AWS_* variables")
	f.StringVarP(&opts.Output, "output", "o", "", "write the manifest to `FILE` (default: standard output)")
	f.BoolVar(&opts.Apply, "apply", false, "create the ConfigMap and the Job in the cluster")
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", "with --apply: the kubeconfig `FILE`")
	flags := clientcmd.RecommendedConfigOverrideFlags("")
	flags.ContextOverrideFlags.Namespace = clientcmd.FlagInfo{}
	clientcmd.BindOverrideFlags(&opts.Overrides, f, flags)
	f.BoolVar(&opts.Run, "run", false, "re-analyze one shard here (what each pod runs)")
	f.IntVar(&opts.Index, "index", -1, "with --run: the shard's `INDEX` (default $"+indexEnv+")")
	return cmd
}

// imageTag is the image tag of this coroner: its version, else latest.
func imageTag() string {
	if v := strings.TrimPrefix(version, "v"); v != "" && v != "dev" && !strings.ContainsAny(v, "+ ") {
		return v
	}
	return "latest"
}

func runReanalyze(ctx context.Context, opts *ReanalyzeOptions, io *IOStreams) error {
	if !trialName.MatchString(opts.Trial) {
		return flagErrorf("--trial %q: a trial's name is 1 to 40 lower case letters, digits and dashes", opts.Trial)
	}
	if opts.RulesDir == "" {
		return flagErrorf("--rules DIR: the rules to try")
	}
	if opts.Shards < 1 {
		return flagErrorf("--shards must be at least 1")
	}
	if !bucket.IsURI(opts.BundleStore) {
		return flagErrorf("--bundle-store s3://BUCKET/PREFIX: where the bundles are")
	}
	if _, err := bucket.Parse(opts.BundleStore); err != nil {
		return &FlagError{err}
	}
	if opts.Run {
		return runShard(ctx, opts, io)
	}
	files, err := ruleFiles(opts.RulesDir)
	if err != nil {
		return err
	}
	if _, err := loadRuleSet([]string{opts.RulesDir}, "all"); err != nil {
		return err // refuse a manifest whose pods would all fail
	}
	cm, job := reanalyzeObjects(opts, files)
	if opts.Apply {
		return applyReanalyze(ctx, opts, cm, job, io)
	}
	var buf bytes.Buffer
	for i, obj := range []any{cm, job} {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(data)
	}
	if opts.Output != "" {
		return os.WriteFile(opts.Output, buf.Bytes(), 0o644)
	}
	_, err = io.Out.Write(buf.Bytes())
	return err
}

// ruleFiles reads the YAML files of a rules directory (a ConfigMap's keys: the file names).
func ruleFiles(dir string) (map[string]string, error) {
	if err := checkDir(dir); err != nil {
		return nil, fmt.Errorf("--rules %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--rules %s: %w", dir, err)
	}
	files := map[string]string{}
	size := 0
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("--rules %s: %w", dir, err)
		}
		files[name] = string(data)
		size += len(data)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("--rules %s: no .yaml file", dir)
	}
	if size > 900<<10 {
		return nil, fmt.Errorf("--rules %s: %d bytes of rules do not fit a ConfigMap (1 MiB)", dir, size)
	}
	return files, nil
}

// reanalyzeObjects are the ConfigMap of the rules and the Indexed Job.
func reanalyzeObjects(opts *ReanalyzeOptions, rules map[string]string) (*corev1.ConfigMap, *batchv1.Job) {
	name := "coroner-reanalyze-" + opts.Trial
	labels := map[string]string{"app.kubernetes.io/name": "coroner", "app.kubernetes.io/component": "reanalyze", "coroner.dev/trial": opts.Trial}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: opts.Namespace, Labels: labels},
		Data:       rules,
	}
	parallelism := int32(opts.Shards)
	if opts.Parallelism > 0 && opts.Parallelism < opts.Shards {
		parallelism = int32(opts.Parallelism)
	}
	completions := int32(opts.Shards)
	indexed := batchv1.IndexedCompletion
	backoff := int32(3)
	optional := true
	nonRoot, noEscalation := true, false
	secretEnv := func(name, secret, key string, optional bool) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key, Optional: &optional}}}
	}
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: opts.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed, Completions: &completions, Parallelism: &parallelism, BackoffLimit: &backoff,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:   corev1.RestartPolicyOnFailure,
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &nonRoot, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name: "reanalyze", Image: opts.Image,
						Args: []string{"fleet", "reanalyze", "--run", "--rules", "/rules", "--trial", opts.Trial,
							"--shards", strconv.Itoa(opts.Shards), "--bundle-store", opts.BundleStore},
						Env: []corev1.EnvVar{
							secretEnv(storeEnv, opts.StoreSecret, "store-url", false),
							secretEnv("PGPASSWORD", opts.StoreSecret, "store-password", true),
						},
						EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: opts.S3Secret}, Optional: &optional}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "rules", MountPath: "/rules", ReadOnly: true}, {Name: "tmp", MountPath: "/tmp"}},
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &noEscalation, ReadOnlyRootFilesystem: &nonRoot,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					}},
					Volumes: []corev1.Volume{
						{Name: "rules", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	return cm, job
}

// applyReanalyze creates (or replaces) the ConfigMap and creates the Job.
func applyReanalyze(ctx context.Context, opts *ReanalyzeOptions, cm *corev1.ConfigMap, job *batchv1.Job, io *IOStreams) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = opts.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &opts.Overrides).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %v", err)
	}
	cfg.UserAgent = "coroner/" + version
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	cms := cs.CoreV1().ConfigMaps(cm.Namespace)
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	if _, err := cs.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("Job %s/%s exists: delete it, or name another trial", job.Namespace, job.Name)
		}
		return fmt.Errorf("Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	fmt.Fprintf(io.Out, "job.batch/%s created in %s: %d shards\n", job.Name, job.Namespace, opts.Shards)
	return nil
}

// shardOf is the shard a bundle's key falls in: a hash of the key, so that a bundle keeps its
// shard when others come and go while the pods list the bucket.
func shardOf(key string, shards int) int {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64() % uint64(shards))
}

// runShard re-analyzes the bundles of one shard with the rules and writes them as the trial.
func runShard(ctx context.Context, opts *ReanalyzeOptions, io *IOStreams) error {
	index := opts.Index
	if index < 0 {
		v, ok := os.LookupEnv(indexEnv)
		if !ok {
			return flagErrorf("--run needs the shard's index: $%s (an Indexed Job sets it) or --index", indexEnv)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return flagErrorf("$%s=%q is not an index", indexEnv, v)
		}
		index = n
	}
	if index >= opts.Shards {
		return flagErrorf("shard index %d is not below --shards %d", index, opts.Shards)
	}
	rs, err := loadRuleSet([]string{opts.RulesDir}, "all")
	if err != nil {
		return err
	}
	rv, err := store.RulesVersion(rs)
	if err != nil {
		return err
	}
	s, err := openStore(ctx, opts.Store)
	if err != nil {
		return err
	}
	defer s.Close()
	b, err := bucket.Open(opts.BundleStore, bucketConfig())
	if err != nil {
		return &FlagError{err}
	}
	objects, err := b.List(ctx)
	if err != nil {
		return err
	}
	prefix := b.Location().Prefix
	var keys []string
	for _, o := range objects {
		if shardOf(o.Key, opts.Shards) == index {
			keys = append(keys, o.Key)
		}
	}
	sort.Strings(keys)
	var failed []string
	done := 0
	for _, key := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := reanalyzeOne(ctx, s, b.URI(key), clusterOfKey(prefix, key), opts, rs, rv); err != nil {
			var se *store.SchemaError
			if errors.As(err, &se) {
				return storeError(err)
			}
			fmt.Fprintf(io.ErrOut, "%s: %v\n", b.URI(key), err)
			failed = append(failed, key)
			continue
		}
		done++
	}
	fmt.Fprintf(io.Out, "shard %d of %d: %d bundles re-analyzed into trial %s, %d failed\n", index, opts.Shards, done, opts.Trial, len(failed))
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d bundles of shard %d could not be re-analyzed", len(failed), len(keys), index)
	}
	return nil
}

// clusterOfKey is the cluster a bundle's key names: prefix/cluster/namespace/job/time.tar.gz.
func clusterOfKey(prefix, key string) string {
	rest := strings.TrimPrefix(key, strings.Trim(prefix, "/")+"/")
	if prefix == "" {
		rest = key
	}
	cluster, _, _ := strings.Cut(rest, "/")
	return cluster
}

func reanalyzeOne(ctx context.Context, s *store.Store, uri, cluster string, opts *ReanalyzeOptions, rs *analyze.RuleSet, rv string) error {
	o := diagnose.DefaultOptions()
	local, done, err := fetchInputs(ctx, []string{uri}, o.Limits)
	if err != nil {
		return err
	}
	defer done()
	o.Rules, o.Version = rs, version
	d, err := diagnose.Run(ctx, diagnose.Input{Paths: local}, o)
	if err != nil {
		return err
	}
	defer d.Close()
	a, err := store.FromDiagnosis(ctx, d, store.Meta{Cluster: cluster, BundleURI: uri, RulesVersion: rv, AnalyzedAt: opts.Now()})
	if err != nil {
		return err
	}
	return s.PutTrial(ctx, opts.Trial, a)
}

func newCmdFleetPromote(io *IOStreams) *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "promote TRIAL",
		Short: "Make a trial's analyses the current ones (what the reports count)",
		Long: `Make the analyses of a trial (coroner fleet reanalyze) current for their job attempts, in one
transaction, and close the trial. The analyses they replace stay in the store. Compare first:
'coroner fleet report --trial TRIAL'.`,
		Example: `  coroner fleet report --trial xid-79 --format md
  coroner fleet promote xid-79`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := openStore(cmd.Context(), url)
			if err != nil {
				return err
			}
			defer s.Close()
			n, err := s.Promote(cmd.Context(), args[0])
			if err != nil {
				return storeError(err)
			}
			fmt.Fprintf(io.Out, "trial %s promoted: %d job attempts now count its analyses\n", args[0], n)
			return nil
		},
	}
	addStoreURLFlag(cmd, &url, "the fleet store's `URL` (postgres://user@host/db)")
	return cmd
}
