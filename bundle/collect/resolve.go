package collect

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
)

// Resource is a kind the cluster serves, as discovery describes it.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// String is the kubectl form: "pytorchjobs.kubeflow.org", "pods".
func (r Resource) String() string {
	if r.GVR.Group == "" {
		return r.GVR.Resource
	}
	return r.GVR.Resource + "." + r.GVR.Group
}

// trainingGroups are the API groups whose kinds are training jobs (or what they run on).
var trainingGroups = map[string]bool{
	"kubeflow.org":          true, // training-operator v1: PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob
	"trainer.kubeflow.org":  true, // Trainer v2: TrainJob
	"batch.tensorstack.dev": true, // T9k: ColossalAIJob, PyTorchTrainingJob, DeepSpeedJob...
	"jobset.x-k8s.io":       true,
	"ray.io":                true,
	"batch.volcano.sh":      true,
}

// isTrainingKind reports whether a served resource is one a user would collect.
func isTrainingKind(r Resource) bool {
	if r.GVR.Group == "batch" {
		return r.Kind == "Job"
	}
	if r.GVR.Group == "trainer.kubeflow.org" {
		return r.Kind == "TrainJob"
	}
	return trainingGroups[r.GVR.Group] && strings.HasSuffix(r.Kind, "Job") || r.Kind == "JobSet"
}

// Catalog is what discovery says the cluster serves: each resource once, in its group's
// preferred version when that version serves it, else in the highest version that does (the
// mpi-operator's mpijobs.v2beta1.kubeflow.org beside the training operator's kubeflow.org/v1
// kinds), and every other served version for the user who names one.
type Catalog struct {
	Resources []Resource
	names     [][]string // lower-case names per resource, same order
	// others are the resources in versions other than their default one, with their names.
	others     []Resource
	otherNames [][]string
}

// Discover reads the served resources. A partial discovery failure (one aggregated API down)
// still returns what was discovered, with the failure as a gap message.
func Discover(d discovery.DiscoveryInterface) (*Catalog, string, error) {
	groups, lists, err := d.ServerGroupsAndResources()
	partial := ""
	if err != nil {
		if !discovery.IsGroupDiscoveryFailedError(err) || len(lists) == 0 {
			return nil, "", fmt.Errorf("discovery: %w", err)
		}
		partial = err.Error()
	}
	preferred := map[string]string{}
	for _, g := range groups {
		preferred[g.Name] = g.PreferredVersion.Version
	}
	type served struct {
		r     Resource
		names []string
	}
	var all []served
	best := map[schema.GroupResource]int{} // the default version of each resource: an index into all
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerb(r, "get") {
				continue
			}
			res := Resource{GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced}
			all = append(all, served{res, names(r)})
			gr := res.GVR.GroupResource()
			i, seen := best[gr]
			switch {
			case !seen:
				best[gr] = len(all) - 1
			case all[i].r.GVR.Version == preferred[gr.Group]:
			case gv.Version == preferred[gr.Group] || version.CompareKubeAwareVersionStrings(gv.Version, all[i].r.GVR.Version) > 0:
				best[gr] = len(all) - 1
			}
		}
	}
	c := &Catalog{}
	for i, s := range all {
		if best[s.r.GVR.GroupResource()] == i {
			c.Resources = append(c.Resources, s.r)
			c.names = append(c.names, s.names)
		} else {
			c.others = append(c.others, s.r)
			c.otherNames = append(c.otherNames, s.names)
		}
	}
	return c, partial, nil
}

func hasVerb(r metav1.APIResource, verb string) bool {
	for _, v := range r.Verbs {
		if v == verb {
			return true
		}
	}
	return false
}

// names are the lower-case names a user may type for a resource.
func names(r metav1.APIResource) []string {
	out := []string{strings.ToLower(r.Name), strings.ToLower(r.Kind)}
	if r.SingularName != "" {
		out = append(out, strings.ToLower(r.SingularName))
	}
	for _, s := range r.ShortNames {
		out = append(out, strings.ToLower(s))
	}
	return out
}

// Find returns the served resource with the given kind and group, if any.
func (c *Catalog) Find(group, kind string) (Resource, bool) {
	for _, r := range c.Resources {
		if r.GVR.Group == group && r.Kind == kind {
			return r, true
		}
	}
	return Resource{}, false
}

// Resolve maps what the user typed (kind, plural or short name, optionally followed by
// ".group" or ".version.group") to one served resource: without a version, the resource's
// default version; with one, that version.
func (c *Catalog) Resolve(arg string) (Resource, error) {
	want := strings.ToLower(arg)
	var matches []Resource
	for i, r := range c.Resources {
		for _, n := range c.names[i] {
			if want == n || want == n+"."+r.GVR.Group || want == n+"."+r.GVR.Version+"."+r.GVR.Group {
				matches = append(matches, r)
				break
			}
		}
	}
	for i, r := range c.others {
		for _, n := range c.otherNames[i] {
			if want == n+"."+r.GVR.Version+"."+r.GVR.Group {
				matches = append(matches, r)
				break
			}
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return Resource{}, fmt.Errorf("the cluster serves no kind %q; training kinds it serves: %s", arg, c.trainingKinds())
	}
	// The same short name in several groups: the core and batch groups win, as in kubectl.
	for _, m := range matches {
		if m.GVR.Group == "" || m.GVR.Group == "batch" {
			return m, nil
		}
	}
	var opts []string
	for _, m := range matches {
		opts = append(opts, m.String())
	}
	sort.Strings(opts)
	return Resource{}, fmt.Errorf("kind %q is ambiguous; name one of: %s", arg, strings.Join(opts, ", "))
}

// TrainingKinds are the served kinds a user would collect (the training jobs, JobSets and
// batch Jobs), sorted by group and kind.
func (c *Catalog) TrainingKinds() []Resource {
	var out []Resource
	for _, r := range c.Resources {
		if isTrainingKind(r) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].GVR.Group != out[b].GVR.Group {
			return out[a].GVR.Group < out[b].GVR.Group
		}
		return out[a].Kind < out[b].Kind
	})
	return out
}

func (c *Catalog) trainingKinds() string {
	var out []string
	for _, r := range c.Resources {
		if isTrainingKind(r) {
			out = append(out, fmt.Sprintf("%s (%s)", r.String(), r.Kind))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
