package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/testenv"
)

// convert kkp's manifests are accepted by a real API server with Annex's
// CRDs (OpenAPI and CEL validation, server-side dry run), and the command
// prints them on stdout and its report on stderr.
func TestConvertKKP(t *testing.T) {
	in := filepath.Join("..", "..", "internal", "convert", "kkp", "testdata", "fleet.in.yaml")
	root := newRootCommand("annexctl")
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"convert", "kkp", in, "--cluster", "prod-eu", "--namespace", "team-platform"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("convert kkp: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"converted: 2 Catalogs, 1 ExtensionProfiles, 3 ExtensionInstallations", "helm release kube-system-ingress in namespace ingress-nginx"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stdout.String(), "not carried over") {
		t.Errorf("the report went to stdout:\n%s", stdout.String())
	}

	env := testenv.Start(t)
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-platform"},
	}}); err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stdout.Bytes()), 4096)
	kinds := map[string]int{}
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			break
		}
		if err := c.Create(ctx, obj, client.DryRunAll); err != nil {
			t.Errorf("the API server refuses %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		kinds[obj.GetKind()]++
	}
	if kinds["Catalog"] != 2 || kinds["ExtensionProfile"] != 1 || kinds["ExtensionInstallation"] != 3 {
		t.Errorf("decoded %v from stdout, want 2 Catalogs, 1 ExtensionProfile, 3 ExtensionInstallations", kinds)
	}

	// "-" reads stdin.
	doc, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	root = newRootCommand("annexctl")
	stdout.Reset()
	root.SetIn(bytes.NewReader(doc))
	root.SetOut(&stdout)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"convert", "kkp", "-"})
	if err := root.ExecuteContext(context.Background()); err != nil || !strings.Contains(stdout.String(), "kind: ExtensionProfile") {
		t.Errorf("convert kkp -: %v\n%s", err, stdout.String())
	}
	if out, code := run(t, "annexctl", "convert", "kkp", "no-such-file.yaml"); code == 0 || !strings.Contains(out, "no-such-file.yaml") {
		t.Errorf("convert kkp of a missing file: exit %d\n%s", code, out)
	}
}
