package parse

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/coroner-dev/coroner/bundle"
)

// FuzzLoadResource: any bytes in a resource file load into a model or a warning, never a
// panic, and never more than the limits allow; the model is the same whether its pods and
// events are decoded from the fast path's tape or from their generic maps.
func FuzzLoadResource(f *testing.F) {
	paths, _ := filepath.Glob("../samples/*/resources/*/*/*/*.yaml")
	for i, p := range paths {
		if i%5 != 0 {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\n"))
	f.Add([]byte(`{"kind":"List","items":[{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}]}`))
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {a: null}}\nmetadata: {name: q}\n"))
	f.Add([]byte("apiVersion: v1\nkind: Event\nmetadata: {name: e}\ncount: 1.5\n"))
	lim := bundle.DefaultLimits()
	lim.MaxResourceBytes = 1 << 20
	f.Fuzz(func(t *testing.T, data []byte) {
		files := fstest.MapFS{"resources/core/Pod/ml/p.yaml": {Data: data}}
		b := &bundle.Bundle{Source: "fuzz", FS: files, Limits: lim,
			Files: []bundle.File{{Path: "resources/core/Pod/ml/p.yaml", Size: int64(len(data))}}}
		m := loadBoth(t, b) // the same model whether pods go straight from the tape or not
		for _, w := range m.Warnings {
			if bytes.ContainsRune([]byte(w), '\n') {
				t.Fatalf("a warning of more than one line: %q", w)
			}
		}
	})
}
