package cli_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv"
)

// An installation whose 1.x supports Kubernetes up to 1.31 and whose
// inventory holds a FlowSchema of flowcontrol.apiserver.k8s.io/v1beta3,
// which Kubernetes 1.32 removed: preflight for 1.32 names both problems;
// for 1.31.5 it finds none.
func TestPreflight(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	src := func(v string) v1alpha1.ArtifactSource {
		return v1alpha1.ArtifactSource{URL: "https://charts.example.com/flow-" + v + ".tgz"}
	}
	if err := env.Client.Create(ctx, &v1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: "flow"},
		Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
			{Version: "2.0.0", KubeVersion: ">=1.32.0-0", Source: src("2.0.0")},
			{Version: "1.0.0", KubeVersion: ">=1.30.0-0 <1.32.0-0", Source: src("1.0.0")},
		}},
	}); err != nil {
		t.Fatal(err)
	}
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "flow"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "flow", Version: "1.x"},
	}
	if err := env.Client.Create(ctx, inst); err != nil {
		t.Fatal(err)
	}
	inst.Status.InstalledVersion = "1.0.0"
	inst.Status.Inventory = []v1alpha1.ObjectReference{
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta3", Kind: "FlowSchema", Name: "flow-exempt"},
		{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "flow"},
	}
	if err := env.Client.Status().Update(ctx, inst); err != nil {
		t.Fatal(err)
	}
	observe := func(context.Context, string) (string, error) { return "v1.31.5", nil }

	var out bytes.Buffer
	err := cli.Preflight(ctx, env.Client, observe, cli.PreflightOptions{KubeVersion: "1.32.0", Out: &out})
	if !errors.Is(err, cli.ErrPreflightFailed) {
		t.Fatalf("err %v, want ErrPreflightFailed", err)
	}
	for _, want := range []string{
		"Resolution for the hub cluster, Kubernetes 1.32.0 (hypothetical; it runs v1.31.5)",
		"default/flow: ", // cannot be satisfied, with the resolver's reason
		"needs Kubernetes",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	row := ""
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "FlowSchema flow-exempt") {
			row = strings.Join(strings.Fields(line), " ")
		}
	}
	if want := "default/flow FlowSchema flow-exempt flowcontrol.apiserver.k8s.io/v1beta3 1.32 flowcontrol.apiserver.k8s.io/v1"; row != want {
		t.Errorf("removed-API row %q, want %q:\n%s", row, want, out.String())
	}
	if strings.Contains(out.String(), "ConfigMap default/flow  v1") {
		t.Errorf("a served API is reported:\n%s", out.String())
	}

	out.Reset()
	if err := cli.Preflight(ctx, env.Client, observe, cli.PreflightOptions{KubeVersion: "1.31.9", Out: &out}); err != nil {
		t.Fatalf("preflight within the supported range: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "No installed object uses an API version Kubernetes 1.31.9 removed.") {
		t.Errorf("report:\n%s", out.String())
	}
}
