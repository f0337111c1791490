package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv"
)

// Two installations of an extension whose content is namespaced only run
// different versions side by side: the resolution lists the one that cannot
// share the cluster's version as an instance with its own, and nothing
// fails.
func TestResolveInstances(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	src := func(v string) v1alpha1.ArtifactSource {
		return v1alpha1.ArtifactSource{URL: "https://charts.example.com/app-" + v + ".tgz"}
	}
	if err := env.Client.Create(ctx, &v1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
			{Version: "2.0.0", Source: src("2.0.0")}, {Version: "1.0.0", Source: src("1.0.0")},
		}},
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ ns, rng, installed string }{{"team-a", "^1", "1.0.0"}, {"team-b", "^2", "2.0.0"}} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tc.ns}}); err != nil {
			t.Fatal(err)
		}
		inst := &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "app"},
			Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "app", Version: tc.rng},
		}
		if err := env.Client.Create(ctx, inst); err != nil {
			t.Fatal(err)
		}
		inst.Status.InstalledVersion = tc.installed
		inst.Status.Content = &v1alpha1.ContentScope{Version: tc.installed, ObservedGeneration: inst.Generation}
		if err := env.Client.Status().Update(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}
	observe := func(context.Context, string) (string, error) { return "v1.31.5", nil }
	var out bytes.Buffer
	if err := cli.Resolve(ctx, env.Client, observe, cli.ResolveOptions{Out: &out}); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "app") {
			rows = append(rows, strings.Join(strings.Fields(line), " "))
		}
	}
	want := []string{"1 app 1.0.0 1.0.0 none team-a/app", "2 app 2.0.0 2.0.0 none team-b/app (instance)"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") || strings.Contains(out.String(), "Cannot be satisfied") {
		t.Errorf("resolve:\n%s\nwant rows:\n%s", out.String(), strings.Join(want, "\n"))
	}
}
