package kkp

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestConvertGolden converts every testdata/*.in.yaml and compares the
// manifests with *.out.yaml and the report with *.report.txt.
func TestConvertGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		base := strings.TrimSuffix(in, ".in.yaml")
		t.Run(filepath.Base(base), func(t *testing.T) {
			docs, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Convert(docs, Options{Cluster: "prod-eu", Namespace: "team-platform"})
			if err != nil {
				t.Fatal(err)
			}
			out, err := res.YAML()
			if err != nil {
				t.Fatal(err)
			}
			golden(t, base+".out.yaml", string(out))
			golden(t, base+".report.txt", res.Report())
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to rewrite it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestConvertRefusals(t *testing.T) {
	for name, tc := range map[string]struct{ docs, want string }{
		"nothing of KKP": {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", "no ApplicationDefinition or ApplicationInstallation"},
		"values twice": {`apiVersion: apps.kubermatic.k8c.io/v1
kind: ApplicationInstallation
metadata: {name: a, namespace: ns}
spec:
  applicationRef: {name: a, version: 1.0.0}
  values: {x: 1}
  valuesBlock: "y: 2"
`, "ApplicationInstallation ns/a: spec.values: both values and valuesBlock are set"},
		"version without a Helm source": {`apiVersion: apps.kubermatic.k8c.io/v1
kind: ApplicationDefinition
metadata: {name: a}
spec:
  versions:
  - version: 1.0.0
    template: {source: {git: {remote: https://example.com/a.git}}}
---
apiVersion: apps.kubermatic.k8c.io/v1
kind: ApplicationInstallation
metadata: {name: a, namespace: ns}
spec:
  applicationRef: {name: a, version: 1.0.0}
`, "ApplicationDefinition a has no Helm source for version 1.0.0"},
		"no name":      {"apiVersion: apps.kubermatic.k8c.io/v1\nkind: ApplicationDefinition\nspec: {}\n", "has no metadata.name"},
		"not YAML":     {"apiVersion: [", "document 1"},
		"bad interval": {"apiVersion: apps.kubermatic.k8c.io/v1\nkind: ApplicationInstallation\nmetadata: {name: a, namespace: ns}\nspec:\n  applicationRef: {name: a, version: 1.0.0}\n  reconciliationInterval: soon\n", `spec.reconciliationInterval "soon"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Convert([]byte(tc.docs), Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Convert: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestReleaseName(t *testing.T) {
	for _, tc := range []struct{ namespace, name, want string }{
		{"kube-system", "ingress", "kube-system-ingress"},
		// 53 characters exactly stay as they are.
		{"kube-system", strings.Repeat("a", 41), "kube-system-" + strings.Repeat("a", 41)},
	} {
		if got := ReleaseName(tc.namespace, tc.name); got != tc.want {
			t.Errorf("ReleaseName(%q, %q) = %q, want %q", tc.namespace, tc.name, got, tc.want)
		}
	}
	long := ReleaseName("kube-system", strings.Repeat("b", 50))
	if len(long) != 53 || !strings.HasPrefix(long, strings.Repeat("b", 43)+"-") {
		t.Errorf("ReleaseName of a long name = %q (%d characters), want 43 b's, '-', 9 hex digits", long, len(long))
	}
	if ReleaseName("kube-system", strings.Repeat("b", 50)) == ReleaseName("other", strings.Repeat("b", 50)) {
		t.Error("long names in two namespaces got the same release name")
	}
}
