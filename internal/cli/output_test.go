package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv"
)

// resolve, preflight and approve print data with -o yaml|json: the same
// resolution the table shows, and the Approval created.
func TestResolvePreflightApproveData(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	for _, obj := range []client.Object{
		&v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "cert-manager"}, Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
			{Version: "1.15.0", Source: v1alpha1.ArtifactSource{URL: "builtin://cert-manager-1.15.0.tgz"}}}}},
		&v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "podinfo"}, Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
			{Version: "6.5.0", KubeVersion: "<1.40.0-0", Dependencies: []v1alpha1.Dependency{{Name: "cert-manager", Version: "^1.14"}},
				Source: v1alpha1.ArtifactSource{URL: "https://charts.example.com/podinfo-6.5.0.tgz"}}}}},
		&v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: v1alpha1.ExtensionInstallationSpec{Extension: "podinfo"}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	observe := func(context.Context, string) (string, error) { return "1.36.4", nil }

	var out bytes.Buffer
	if err := cli.Resolve(ctx, env.Client, observe, cli.ResolveOptions{Output: cli.OutputJSON, Out: &out}); err != nil {
		t.Fatal(err)
	}
	var resolution cli.ResolutionView
	if err := json.Unmarshal(out.Bytes(), &resolution); err != nil {
		t.Fatalf("resolve -o json: %v\n%s", err, out.String())
	}
	if resolution.Cluster != cli.HubCluster || resolution.KubeVersion != "1.36.4" || len(resolution.Steps) != 2 ||
		resolution.Steps[0].Extension != "cert-manager" || resolution.Steps[0].Change != "install" || strings.Join(resolution.Steps[0].RequiredBy, ",") != "podinfo 6.5.0" ||
		resolution.Steps[1].Extension != "podinfo" || strings.Join(resolution.Steps[1].For, ",") != "default/web" {
		t.Errorf("resolve -o json: %+v", resolution)
	}

	// At 1.40 podinfo has no version: preflight prints why and fails.
	out.Reset()
	err := cli.Preflight(ctx, env.Client, observe, cli.PreflightOptions{KubeVersion: "1.40.0", Output: cli.OutputYAML, Out: &out})
	if err != cli.ErrPreflightFailed {
		t.Errorf("preflight for 1.40: %v, want ErrPreflightFailed", err)
	}
	var pre cli.PreflightView
	if err := yaml.Unmarshal(out.Bytes(), &pre); err != nil {
		t.Fatal(err)
	}
	if pre.OK || len(pre.Resolution.Unsatisfiable) != 1 || pre.Resolution.Unsatisfiable[0].Installation != "default/web" {
		t.Errorf("preflight -o yaml:\n%s", out.String())
	}

	// approve -o json, as bob, of a change alice requested.
	inst := &v1alpha1.ExtensionInstallation{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, inst); err != nil {
		t.Fatal(err)
	}
	digest := "sha256:" + strings.Repeat("ef", 32)
	inst.Status.Change = &v1alpha1.PendingChange{Event: "PreInstall", ToVersion: "6.5.0", Digest: digest,
		Approval: &v1alpha1.ChangeApproval{State: v1alpha1.ApprovalPending, Policies: []string{"all"}, Reasons: []string{"every change"}, RequestedBy: "alice"}}
	if err := env.Client.Status().Update(ctx, inst); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "bob", Groups: []string{"system:masters"}}
	bob, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := cli.Approve(ctx, bob, cli.ApproveOptions{Installation: "web", Namespace: "default", Output: cli.OutputJSON, Out: &out}); err != nil {
		t.Fatal(err)
	}
	var res cli.ApproveResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("approve -o json: %v\n%s", err, out.String())
	}
	if res.Approver != "bob" || res.Approval != "default/web-efefefefefef" || res.Change.Digest != digest || res.Existed {
		t.Errorf("approve -o json: %+v", res)
	}
}
