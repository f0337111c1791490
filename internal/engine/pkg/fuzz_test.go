package pkg

import (
	"errors"
	"os"
	"testing"
	"testing/fstest"
)

// FuzzLoadArchive feeds archives to LoadArchive: it must return a package
// or an error, never panic or hang, and every error must be a *LoadError
// or a plain read error. The seed corpus in testdata/fuzz/FuzzLoadArchive
// holds the test packages as archives.
func FuzzLoadArchive(f *testing.F) {
	f.Add(tgz(f, dirEntries(f, "testdata/packages/full", "")...))
	f.Add(tgz(f, dirEntries(f, "testdata/packages/legacy", "legacy/")...))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := LoadArchive(data)
		if err != nil {
			return
		}
		if p == nil {
			t.Fatal("nil package without an error")
		}
		// A package that loads can be linted and its plans rendered
		// without panicking.
		for name := range p.Operator.Plans {
			params, err := Resolve(p, nil, nil)
			if err != nil {
				return
			}
			RenderPlan(p, name, Input{Instance: "i", Namespace: "ns", Params: params})
		}
		if fsys, err := ArchiveFS(data); err == nil {
			Lint(fsys)
		}
	})
}

// FuzzLoadFiles feeds operator.yaml, params.yaml and one template
// straight to the reader, Lint and the renderer (mutated archives mostly
// fail gzip's checksum, so FuzzLoadArchive rarely reaches the YAML).
func FuzzLoadFiles(f *testing.F) {
	for _, dir := range []string{"testdata/packages/full", "testdata/packages/legacy"} {
		op, err1 := os.ReadFile(dir + "/operator.yaml")
		params, err2 := os.ReadFile(dir + "/params.yaml")
		if err := errors.Join(err1, err2); err != nil {
			f.Fatal(err)
		}
		f.Add(op, params, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n"))
	}
	f.Add([]byte("name: x\ntasks:\n  - name: a\n    kind: Apply\n    spec: {resources: [t.yaml]}\n    patches: [t.yaml]\nplans: {deploy: {steps: [{name: s, tasks: [a]}]}}\n"),
		[]byte("A: {default: 1}\n"), []byte("target: {kind: ConfigMap, name: x}\npatch: [{op: add, path: /data, value: {}}]\n"))
	f.Fuzz(func(t *testing.T, operator, params, tmpl []byte) {
		fsys := fstest.MapFS{
			"operator.yaml":    {Data: operator},
			"params.yaml":      {Data: params},
			"templates/t.yaml": {Data: tmpl},
		}
		Lint(fsys)
		p, err := LoadDir(fsys)
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is %T, want *LoadError", err, err)
			}
			return
		}
		values, err := Resolve(p, nil, nil)
		if err != nil {
			return
		}
		for name := range p.Operator.Plans {
			RenderPlan(p, name, Input{Instance: "i", Namespace: "ns", Params: values})
		}
	})
}
