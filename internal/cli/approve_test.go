package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv"
)

// approve shows the pending change and approves exactly its digest; it
// refuses when nothing is pending, when the change needs no approval,
// when the digest reviewed is not the pending one, and when the caller
// requested the change.
func TestApprove(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	as := func(user string) client.Client {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters"}}
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	alice, bob := as("alice"), as("bob")
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "podinfo"},
	}
	if err := alice.Create(ctx, inst); err != nil {
		t.Fatal(err)
	}
	opts := func(digest string) (cli.ApproveOptions, *bytes.Buffer) {
		var out bytes.Buffer
		return cli.ApproveOptions{Installation: "web", Namespace: "default", Digest: digest, Out: &out}, &out
	}
	setChange := func(pc *v1alpha1.PendingChange) {
		t.Helper()
		inst.Status.Change = pc
		if err := env.Client.Status().Update(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}

	o, _ := opts("")
	if err := cli.Approve(ctx, bob, o); err == nil || !strings.Contains(err.Error(), "no pending change") {
		t.Fatalf("nothing pending: %v", err)
	}
	digest := "sha256:" + strings.Repeat("ab", 32)
	change := &v1alpha1.PendingChange{Event: "PreUpgrade", FromVersion: "1.0.0", ToVersion: "2.0.0", Digest: digest,
		PermissionsGrow: []string{"get on secrets cluster-wide"}}
	setChange(change)
	if err := cli.Approve(ctx, bob, o); err == nil || !strings.Contains(err.Error(), "needs no approval") {
		t.Fatalf("a change no policy holds: %v", err)
	}

	change.Approval = &v1alpha1.ChangeApproval{State: v1alpha1.ApprovalPending, Reasons: []string{"Major: 1.0.0 → 2.0.0"},
		Policies: []string{"majors"}, CRDChanges: []string{"creates CustomResourceDefinition widgets.example.com"}, RequestedBy: "alice"}
	setChange(change)
	o, _ = opts("sha256:" + strings.Repeat("cd", 32))
	if err := cli.Approve(ctx, bob, o); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Fatalf("another digest: %v", err)
	}
	o, _ = opts(digest)
	if err := cli.Approve(ctx, alice, o); err == nil || !strings.Contains(err.Error(), "you (alice) requested") {
		t.Fatalf("self-approval: %v", err)
	}

	o, out := opts(digest)
	if err := cli.Approve(ctx, bob, o); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"default/web (podinfo): upgrade 1.0.0 → 2.0.0 (PreUpgrade)",
		"  permissions grow:\n    get on secrets cluster-wide",
		"  CRD changes:\n    creates CustomResourceDefinition widgets.example.com",
		"  approval Pending (policy majors):\n    Major: 1.0.0 → 2.0.0",
		"approved as bob: Approval default/web-abababababab of " + digest,
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("approve output lacks %q:\n%s", line, out.String())
		}
	}
	a := &v1alpha1.Approval{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-abababababab"}, a); err != nil {
		t.Fatal(err)
	}
	if a.Spec.Approver != "bob" || a.Spec.Digest != digest || a.Spec.Installation != "web" || len(a.OwnerReferences) != 1 {
		t.Fatalf("approval: %+v %+v", a.Spec, a.OwnerReferences)
	}
	// An Approval cannot be pointed at another change afterwards.
	a.Spec.Digest = "sha256:" + strings.Repeat("cd", 32)
	if err := bob.Update(ctx, a); err == nil || !strings.Contains(err.Error(), "cannot be changed") {
		t.Fatalf("changing an Approval's digest: %v", err)
	}

	// deny: another change, denied with a reason — by its requester too
	// (withdrawing grants nothing); once denied, it can be neither
	// approved nor denied again.
	denied := "sha256:" + strings.Repeat("ef", 32)
	change.Digest, change.Approval.State = denied, v1alpha1.ApprovalPending
	setChange(change)
	o, out = opts(denied)
	o.Deny, o.Reason = true, "not this quarter"
	if err := cli.Approve(ctx, alice, o); err != nil {
		t.Fatal(err)
	}
	if want := "denied as alice: Approval default/web-efefefefefef-deny (Deny) of " + denied; !strings.Contains(out.String(), want) {
		t.Errorf("deny output lacks %q:\n%s", want, out.String())
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-efefefefefef-deny"}, a); err != nil {
		t.Fatal(err)
	}
	if a.Spec.Decision != v1alpha1.DecisionDeny || a.Spec.Reason != "not this quarter" || a.Spec.Approver != "alice" || a.Spec.Digest != denied {
		t.Fatalf("denial: %+v", a.Spec)
	}
	change.Approval.State, change.Approval.DeniedBy = v1alpha1.ApprovalDenied, "alice"
	setChange(change)
	o, _ = opts(denied)
	if err := cli.Approve(ctx, bob, o); err == nil || !strings.Contains(err.Error(), "was denied by alice") {
		t.Fatalf("approving a denied change: %v", err)
	}
}
