package kkp

import (
	"os"
	"testing"
)

// FuzzConvert: any input either fails with an error or converts into
// objects that encode; it never panics.
func FuzzConvert(f *testing.F) {
	if b, err := os.ReadFile("testdata/fleet.in.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("apiVersion: apps.kubermatic.k8c.io/v1\nkind: ApplicationInstallation\nmetadata: {name: a, namespace: b}\nspec: {applicationRef: {name: a, version: 1.0.0}}\n"))
	f.Add([]byte("kind: List\nitems: [{kind: List, items: []}]\n"))
	f.Fuzz(func(t *testing.T, docs []byte) {
		res, err := Convert(docs, Options{Cluster: "c"})
		if err != nil {
			return
		}
		if _, err := res.YAML(); err != nil {
			t.Fatalf("converted objects do not encode: %v", err)
		}
		_ = res.Report()
	})
}
