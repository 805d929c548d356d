package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/coroner-dev/coroner/"

// arrows is the package picture of docs/design.md: each package of the module and the
// packages of the module it may import directly. The chains read
// cmd -> diagnose -> report -> analyze -> parse -> bundle and diagnose -> index -> logscan ->
// bundle; analyze -> logscan too: diagnose runs the one scan of the logs (logscan) with the
// index's and analyze's visitors, and neither of those imports the other. rules, templates
// and internal/* are leaves; no arrow points up. A new package fails the test until
// it is given its row.
var arrows = map[string][]string{
	"bundle":           {"internal/outfile", "internal/scratch"},
	"bundle/redact":    {"bundle", "frtrace", "internal/literal", "internal/yamlbound"},
	"bundle/collect":   {"bundle", "frtrace"},
	"parse":            {"bundle", "frtrace", "internal/yamlbound"},
	"logscan":          {"bundle", "internal/literal"},
	"index":            {"logscan", "bundle", "internal/literal", "internal/scratch", "index/gzindex", "search/syntax"},
	"search/syntax":    {"logscan"},
	"search":           {"diagnose", "index", "parse", "bundle", "bundle/redact"},
	"index/gzindex":    nil,
	"rules":            nil,
	"analyze":          {"logscan", "parse", "bundle", "rules", "frtrace", "internal/literal"},
	"templates":        nil,
	"report":           {"analyze", "parse", "bundle", "frtrace", "templates"},
	"narrate":          {"report", "analyze", "index", "bundle", "bundle/redact"},
	"narrate/ollama":   {"narrate"},
	"diagnose":         {"analyze", "report", "index", "logscan", "parse", "bundle", "bundle/redact"},
	"compare":          {"diagnose", "analyze", "report", "index", "parse", "bundle/redact", "logscan"},
	"watch":            {"diagnose", "analyze", "report", "bundle", "bundle/collect", "internal/outfile", "store", "bucket"},
	"mcpserver":        {"diagnose", "search", "report", "analyze", "index", "bundle", "bundle/redact", "compare"},
	"store":            {"diagnose", "analyze", "report", "internal/outfile"},
	"bucket":           nil,
	"fleetreport":      {"store", "report"},
	"cmd/coroner":      {"*"},
	"frtrace":          {"internal/pickle"},
	"internal/pickle":  nil,
	"internal/literal": nil, "internal/outfile": {"internal/scratch"}, "internal/scratch": nil, "internal/yamlbound": nil,
	"internal/samplegen": nil, "internal/testcluster": nil, "internal/tinygguf": nil, "internal/testpg": nil, "internal/tests3": nil, "internal/tartest": nil,
	"internal/fleetseed":             {"store"},
	"internal/tinygguf/cmd/tinygguf": {"internal/tinygguf"},
	"internal/ociimage":              nil,
	"internal/ociimage/cmd/mkimage":  {"internal/ociimage"},
	"samples/internal/genbundle":     {"internal/samplegen"},
	"samples/internal/mkmanifest":    nil,
	"internal/spotbundle":            {"bundle", "logscan"},
	"samples/internal/spotbundle":    {"internal/spotbundle"},
}

// online are the only packages that may talk to a cluster (client-go).
var online = map[string]bool{"bundle/collect": true, "watch": true, "cmd/coroner": true, "internal/testcluster": true}

// listedPackage is one package of the module as go list gives it: its direct imports and all
// its dependencies, the standard library's included.
type listedPackage struct {
	ImportPath    string
	Imports, Deps []string
}

// listModule runs go list over the whole module once for every test of this file.
var listModule = sync.OnceValues(func() (map[string]listedPackage, error) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "../../...").Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	pkgs := map[string]listedPackage{}
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	return pkgs, nil
})

// modulePackages is the module's packages by their path in the module, in path order.
func modulePackages(t *testing.T) []listedPackage {
	t.Helper()
	pkgs, err := listModule()
	require.NoError(t, err)
	var out []listedPackage
	for _, name := range slices.Sorted(maps.Keys(pkgs)) {
		out = append(out, pkgs[name])
	}
	return out
}

// depsOf is every dependency of the module's package pkg.
func depsOf(t *testing.T, pkg string) []string {
	t.Helper()
	pkgs, err := listModule()
	require.NoError(t, err)
	p, ok := pkgs[pkg]
	require.True(t, ok, "no package %s in the module", pkg)
	return p.Deps
}

// standard reports whether an import path is the standard library's: its first element has
// no dot (vendored and internal packages of the standard library included).
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// TestPackageArrows checks every direct import between the module's packages against arrows,
// and that every arrow is used: the picture is the code's, not a wish list.
func TestPackageArrows(t *testing.T) {
	for _, p := range modulePackages(t) {
		pkg := strings.TrimPrefix(p.ImportPath, module)
		allowed, ok := arrows[pkg]
		require.True(t, ok, "package %s has no row in arrows (cmd/coroner/arch_test.go): decide where it sits", pkg)
		if len(allowed) == 1 && allowed[0] == "*" {
			continue
		}
		used := map[string]bool{}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			used[dep] = true
			require.Contains(t, allowed, dep, "%s imports %s: an arrow the package picture does not have", pkg, dep)
		}
		for _, dep := range allowed {
			assert.True(t, used[dep], "arrows allows %s -> %s, which the code does not have: remove it", pkg, dep)
		}
	}
}

// TestOfflinePackagesNeverReachACluster: nothing that reads or analyzes a bundle may depend,
// even indirectly, on client-go or on collect.
func TestOfflinePackagesNeverReachACluster(t *testing.T) {
	for _, p := range modulePackages(t) {
		pkg := strings.TrimPrefix(p.ImportPath, module)
		if online[pkg] {
			continue
		}
		for _, dep := range p.Deps {
			require.False(t, strings.HasPrefix(dep, "k8s.io/client-go"), "%s depends on %s: only %v may reach a cluster", pkg, dep, keys(online))
			require.False(t, strings.HasSuffix(dep, "/bundle/collect"), "%s depends on %s", pkg, dep)
		}
	}
}

// TestLibrariesStayInTheirPlace: bleve is the index's, the Ollama client narrate/ollama's, the MCP SDK mcpserver's,
// and bundle uses only the standard library, the module's leaves and the xz and zstd readers.
func TestLibrariesStayInTheirPlace(t *testing.T) {
	owners := map[string]string{"github.com/blevesearch/": "index", "github.com/ollama/": "narrate/ollama", "github.com/modelcontextprotocol/": "mcpserver",
		"github.com/jackc/": "store", "github.com/minio/": "bucket"}
	for _, p := range modulePackages(t) {
		pkg := strings.TrimPrefix(p.ImportPath, module)
		for _, imp := range p.Imports {
			for prefix, owner := range owners {
				if strings.HasPrefix(imp, prefix) && pkg != owner && pkg != "cmd/coroner" {
					t.Errorf("%s imports %s: only %s may", pkg, imp, owner)
				}
			}
		}
	}
	for _, dep := range depsOf(t, "bundle") {
		if standard(dep) {
			continue
		}
		decompressor := strings.HasPrefix(dep, "github.com/ulikunitz/xz") || strings.HasPrefix(dep, "github.com/klauspost/compress")
		if !strings.HasPrefix(dep, module) && dep != strings.TrimSuffix(module, "/") && !decompressor {
			t.Errorf("bundle depends on %s; it must use only the standard library and the xz and zstd readers", dep)
		}
	}
	// narrate reaches the network only through the LLM the caller hands it.
	for _, dep := range depsOf(t, "narrate") {
		require.False(t, strings.HasSuffix(dep, "/narrate/ollama") || strings.HasPrefix(dep, "github.com/ollama/"),
			"narrate depends on %s: the model client is handed in, not imported", dep)
	}
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
