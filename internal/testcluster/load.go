package testcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// CRD describes a custom resource the tests create with a minimal schema.
type CRD struct {
	Group, Version, Kind, Plural, Short string
	Cluster                             bool
}

// TrainingCRDs are the job kinds of the seed documents, and what they run on.
var TrainingCRDs = []CRD{
	{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob", Plural: "pytorchjobs"},
	{Group: "kubeflow.org", Version: "v2beta1", Kind: "MPIJob", Plural: "mpijobs"},
	{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJob", Plural: "trainjobs"},
	{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainingRuntime", Plural: "trainingruntimes"},
	{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "ClusterTrainingRuntime", Plural: "clustertrainingruntimes", Cluster: true},
	{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet", Plural: "jobsets"},
	{Group: "batch.tensorstack.dev", Version: "v1beta1", Kind: "ColossalAIJob", Plural: "colossalaijobs", Short: "caij"},
	{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup", Plural: "podgroups"},
}

// InstallCRDs creates the CRDs and waits until discovery serves them.
func (c *Cluster) InstallCRDs(t testing.TB, crds ...CRD) {
	t.Helper()
	ext := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, d := range crds {
		scope := "Namespaced"
		if d.Cluster {
			scope = "Cluster"
		}
		names := map[string]any{"plural": d.Plural, "kind": d.Kind, "singular": strings.ToLower(d.Kind)}
		if d.Short != "" {
			names["shortNames"] = []any{d.Short}
		}
		crd := map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": d.Plural + "." + d.Group},
			"spec": map[string]any{
				"group": d.Group, "scope": scope, "names": names,
				"versions": []any{map[string]any{
					"name": d.Version, "served": true, "storage": true,
					"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
					"subresources": map[string]any{"status": map[string]any{}},
				}},
			},
		}
		obj := crd
		if _, err := c.Dyn.Resource(ext).Create(ctx(t), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create CRD %s: %v", d.Kind, err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, d := range crds {
		gv := d.Group + "/" + d.Version
		for {
			l, err := c.Kube.Discovery().ServerResourcesForGroupVersion(gv)
			if err == nil && hasKind(l, d.Kind) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD %s not served after 30s: %v", d.Kind, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func hasKind(l *metav1.APIResourceList, kind string) bool {
	for _, r := range l.APIResources {
		if r.Kind == kind {
			return true
		}
	}
	return false
}

// Sample is a bundle directory recreated in the cluster.
type Sample struct {
	Namespace string
	Objects   map[string]*unstructured.Unstructured // "Kind/name" -> object as created
	UIDs      map[string]types.UID                  // the sample's uid -> the cluster's
}

// LoadSample recreates a sample bundle's objects in the cluster (nodes pointing at the kubelet),
// writes their status, and hands the kubelet the sample's logs. Objects are created owners first
// so ownerReferences and event involvedObjects can name the new uids.
func (c *Cluster) LoadSample(t testing.TB, dir, namespace string, k *Kubelet) *Sample {
	t.Helper()
	var objs []*unstructured.Unstructured
	err := filepath.WalkDir(filepath.Join(dir, "resources"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if u.GetNamespace() != "" {
			u.SetNamespace(namespace)
		}
		if ns, _, _ := unstructured.NestedString(u.Object, "involvedObject", "namespace"); ns != "" {
			_ = unstructured.SetNestedField(u.Object, namespace, "involvedObject", "namespace")
		}
		objs = append(objs, u)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Apply(t, k, objs...)
	logs := filepath.Join(dir, "logs")
	_ = filepath.WalkDir(logs, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(logs, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 3 {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		name := parts[2]
		previous := strings.HasSuffix(name, ".previous.log")
		container := strings.TrimSuffix(strings.TrimSuffix(name, ".previous.log"), ".log")
		k.SetLog(namespace, parts[1], container, previous, data)
		return nil
	})
	return s
}

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

func (c *Cluster) ensureNamespace(t testing.TB, ns string) {
	if _, ok := c.namespaces.Load(ns); ok {
		return
	}
	defer c.namespaces.Store(ns, true)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if _, err := c.Dyn.Resource(gvr).Create(ctx(t), u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
}

// Apply creates objects (and their status) in dependency order: namespaces, cluster-scoped
// objects, owners before what they own, pods, events. Nodes get the kubelet's address.
func (c *Cluster) Apply(t testing.TB, k *Kubelet, objs ...*unstructured.Unstructured) *Sample {
	t.Helper()
	s := &Sample{Objects: map[string]*unstructured.Unstructured{}, UIDs: map[string]types.UID{}}
	if k != nil {
		k.setCluster(c.Kube)
	}
	// Owners before owned; events last.
	rank := func(u *unstructured.Unstructured) int {
		switch {
		case u.GetKind() == "Event":
			return 9
		case u.GetKind() == "Pod":
			return 8
		case u.GetNamespace() == "":
			return 0
		}
		return 1 + len(u.GetOwnerReferences())
	}
	sort.SliceStable(objs, func(a, b int) bool {
		ra, rb := rank(objs[a]), rank(objs[b])
		if ra != rb {
			return ra < rb
		}
		return objs[a].GetName() < objs[b].GetName()
	})
	for _, u := range objs {
		if ns := u.GetNamespace(); ns != "" {
			c.ensureNamespace(t, ns)
			s.Namespace = ns
		}
	}
	pending := objs
	for pass := 0; len(pending) > 0; pass++ {
		if pass > 5 {
			t.Fatalf("cannot order the sample's owners: %d objects left", len(pending))
		}
		var later []*unstructured.Unstructured
		for _, u := range pending {
			if !c.create(t, s, u, k) {
				later = append(later, u)
			}
		}
		pending = later
	}
	return s
}

// create makes one object; false when an owner does not exist yet.
func (c *Cluster) create(t testing.TB, s *Sample, orig *unstructured.Unstructured, k *Kubelet) bool {
	t.Helper()
	u := orig.DeepCopy()
	oldUID := u.GetUID()
	refs := u.GetOwnerReferences()
	for i := range refs {
		nu, ok := s.UIDs[string(refs[i].UID)]
		if !ok {
			return false
		}
		refs[i].UID = nu
	}
	u.SetOwnerReferences(refs)
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	status, hasStatus := u.Object["status"]
	switch u.GetKind() {
	case "Event":
		if uid, _, _ := unstructured.NestedString(u.Object, "involvedObject", "uid"); uid != "" {
			if nu, ok := s.UIDs[uid]; ok {
				_ = unstructured.SetNestedField(u.Object, string(nu), "involvedObject", "uid")
			}
		}
		unstructured.RemoveNestedField(u.Object, "involvedObject", "resourceVersion")
	case "Pod":
		unstructured.RemoveNestedField(u.Object, "spec", "priority")
		unstructured.RemoveNestedField(u.Object, "spec", "priorityClassName")
		unstructured.RemoveNestedField(u.Object, "spec", "preemptionPolicy")
	case "Job":
		unstructured.RemoveNestedField(u.Object, "spec", "selector")
		labels, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
		for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"} {
			delete(labels, l)
		}
		_ = unstructured.SetNestedStringMap(u.Object, labels, "spec", "template", "metadata", "labels")
	case "Node":
		st, _ := status.(map[string]any)
		if st == nil {
			st = map[string]any{}
		}
		st["addresses"] = []any{map[string]any{"type": "InternalIP", "address": "127.0.0.1"}}
		st["daemonEndpoints"] = map[string]any{"kubeletEndpoint": map[string]any{"Port": int64(k.Port)}}
		status, hasStatus = st, true
	}
	delete(u.Object, "status")
	gvr := c.gvr(t, u)
	ri := c.Dyn.Resource(gvr).Namespace(u.GetNamespace())
	created, err := ri.Create(ctx(t), u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) && u.GetNamespace() == "" {
		// Cluster-scoped objects (nodes, runtimes) are shared by the samples loaded in one cluster.
		if created, err = ri.Get(ctx(t), u.GetName(), metav1.GetOptions{}); err == nil {
			s.UIDs[string(oldUID)] = created.GetUID()
			return true
		}
	}
	if err != nil {
		t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	if hasStatus && u.GetKind() != "Event" {
		created.Object["status"] = status
		if u.GetKind() == "Job" {
			// A Job's status is validated against its spec and history ("cannot set Failed=True
			// condition without the FailureTarget=true condition", failedIndexes without
			// backoffLimitPerIndex): keep the counts, which no controller has to have written.
			created.Object["status"] = jobStatus(status)
		}
		if created, err = ri.UpdateStatus(ctx(t), created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update status of %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	s.UIDs[string(oldUID)] = created.GetUID()
	s.Objects[u.GetKind()+"/"+u.GetName()] = created
	return true
}

// jobStatus keeps a batch Job's counts and start time (the apiserver refuses terminal
// conditions that no controller wrote in the expected order).
func jobStatus(st any) any {
	m, _ := st.(map[string]any)
	out := map[string]any{}
	for _, k := range []string{"active", "failed", "succeeded", "startTime"} {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// gvr maps an object's kind to its resource through discovery (remembered per kind).
func (c *Cluster) gvr(t testing.TB, u *unstructured.Unstructured) schema.GroupVersionResource {
	t.Helper()
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		t.Fatal(err)
	}
	key := gv.String() + "/" + u.GetKind()
	if r, ok := c.gvrs.Load(key); ok {
		return r.(schema.GroupVersionResource)
	}
	l, err := c.Kube.Discovery().ServerResourcesForGroupVersion(gv.String())
	if err != nil {
		t.Fatalf("discovery of %s: %v", gv, err)
	}
	for _, r := range l.APIResources {
		if r.Kind == u.GetKind() && !strings.Contains(r.Name, "/") {
			c.gvrs.Store(key, gv.WithResource(r.Name))
			return gv.WithResource(r.Name)
		}
	}
	t.Fatalf("the cluster does not serve %s %s", gv, u.GetKind())
	return schema.GroupVersionResource{}
}
