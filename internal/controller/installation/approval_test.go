package installation_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/gate"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// Users of the approval tests, authenticated by impersonation so that the
// API server authorizes them with RBAC as it would anyone: a requester
// may write installations (and read Approvals), an approver may create
// Approvals (and read installations), and "both" may do both.
const (
	requester = "approval-test-requester"
	approver  = "approval-test-approver"
	both      = "approval-test-both"
)

// asUser returns a client authenticated as user, bound in ns to the
// ClusterRoles Annex ships for people (config/rbac/approval_roles.yaml):
// "requester" (annex-extension-requester), "approver" (annex-approver)
// and "rollout-approver" (annex-rollout-approver).
func asUser(t *testing.T, ns, user string, roles ...string) client.Client {
	t.Helper()
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "approval_roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		cr := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict([]byte(doc), cr); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, cr); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	for _, role := range roles {
		name := map[string]string{"requester": "annex-extension-requester", "approver": "annex-approver",
			"rollout-approver": "annex-rollout-approver"}[role]
		b := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		if err := env.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// approvalPolicy creates a cluster-scoped ApprovalPolicy that selects the
// test's namespace only, and deletes it when the test ends.
func approvalPolicy(t *testing.T, ns string, spec v1alpha1.ApprovalPolicySpec) {
	t.Helper()
	spec.Selector.Namespaces = []string{ns}
	p := &v1alpha1.ApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: spec}
	if err := env.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) })
}

// approve creates an Approval of digest for inst as c's user.
func approve(c client.Client, inst *v1alpha1.ExtensionInstallation, name, digest string) error {
	return c.Create(context.Background(), &v1alpha1.Approval{
		ObjectMeta: metav1.ObjectMeta{Namespace: inst.Namespace, Name: name},
		Spec:       v1alpha1.ApprovalSpec{Installation: inst.Name, Digest: digest},
	})
}

// waitPending waits until inst's change, of a digest other than those
// given, waits for approval (reason), and returns the installation.
func waitPending(t *testing.T, inst *v1alpha1.ExtensionInstallation, reason string, notDigests ...string) *v1alpha1.ExtensionInstallation {
	t.Helper()
	got := &v1alpha1.ExtensionInstallation{}
	eventually(t, 60*time.Second, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(inst), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		pc := got.Status.Change
		if c == nil || c.Reason != reason || c.ObservedGeneration != got.Generation || pc == nil || pc.Approval == nil ||
			slices.Contains(notDigests, pc.Digest) {
			return fmt.Errorf("want a new change waiting with %s; change %+v, conditions: %s", reason, pc, describeConditions(got))
		}
		return nil
	})
	return got
}

// configMapVersion is the chart version the podinfo chart's ConfigMap
// on the cluster was rendered from.
func configMapVersion(t *testing.T, ns, name string) string {
	t.Helper()
	cm, err := get(t, configMapGVK, ns, name+"-config")
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedString(cm.Object, "data", "version")
	return v
}

var roleGVK = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}

// A major upgrade under a policy that requires approval of Major
// upgrades: nothing is applied before approval; RBAC keeps a requester
// from approving at all; an Approval of one digest does not apply
// another plan; the requester's own Approval does not count; another
// user's Approval of the pending digest applies it.
func TestApprovalOfMajorUpgrade(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, podinfoChart("approvalmajor", "1.0.0", nil), podinfoChart("approvalmajor", "2.0.0", nil))
	approvalPolicy(t, ns, v1alpha1.ApprovalPolicySpec{Require: []v1alpha1.ApprovalRequirement{v1alpha1.ApprovalMajor}})
	asRequester := asUser(t, ns, requester, "requester")
	asApprover := asUser(t, ns, approver, "approver")
	asBoth := asUser(t, ns, both, "requester", "approver")

	// A first install needs no approval under this policy.
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "approvalmajor", Version: "1.x"},
	}
	if err := asRequester.Create(ctx, inst); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if by := got.Annotations[v1alpha1.AnnotationRequestedBy]; by != requester {
		t.Fatalf("the API server recorded %q as the requester, want %q", by, requester)
	}

	// The requester asks for 2.x: the change waits, nothing is applied.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Version = "2.x"
	if err := asRequester.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitPending(t, got, v1alpha1.ReasonApprovalRequired)
	planA := got.Status.Change
	if planA.FromVersion != "1.0.0" || planA.ToVersion != "2.0.0" || planA.Approval.State != v1alpha1.ApprovalPending ||
		!slices.Equal(planA.Approval.Reasons, []string{"Major: 1.0.0 → 2.0.0"}) || !slices.Equal(planA.Approval.Policies, []string{ns}) ||
		planA.Approval.RequestedBy != requester {
		t.Fatalf("status.change: %+v approval %+v", planA, planA.Approval)
	}
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	if want := fmt.Sprintf("annexctl approve web -n %s --digest %s", ns, planA.Digest); !strings.Contains(ready.Message, want) {
		t.Fatalf("Ready message %q does not say to run %q", ready.Message, want)
	}
	if v := configMapVersion(t, ns, "web"); v != "1.0.0" || got.Status.InstalledVersion != "1.0.0" {
		t.Fatalf("before approval the cluster has %s's objects (installed %s), want 1.0.0's", v, got.Status.InstalledVersion)
	}

	// RBAC: who may write installations may not approve.
	if err := approve(asRequester, got, "self", planA.Digest); !apierrors.IsForbidden(err) {
		t.Fatalf("a requester without the approval permission created an Approval: err = %v", err)
	}

	// The API server keeps the requester: a metadata-only write cannot
	// name someone else.
	patch = client.MergeFrom(got.DeepCopy())
	got.Annotations[v1alpha1.AnnotationRequestedBy] = approver
	if err := asRequester.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	if by := got.Annotations[v1alpha1.AnnotationRequestedBy]; by != requester {
		t.Fatalf("requested-by became %q by a metadata write, want %q kept", by, requester)
	}

	// Plan B: a user who may both request and approve changes the values
	// (a new digest), approves it himself — refused — and approves plan A
	// too: neither applies anything.
	patch = client.MergeFrom(got.DeepCopy())
	got.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"message":"plan b"}`)}
	if err := asBoth.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitPending(t, got, v1alpha1.ReasonApprovalRequired, planA.Digest)
	planB := got.Status.Change
	if planB.Approval.RequestedBy != both {
		t.Fatalf("plan B requested by %q, want %q", planB.Approval.RequestedBy, both)
	}
	if err := approve(asApprover, got, "plan-a", planA.Digest); err != nil {
		t.Fatal(err)
	}
	if err := approve(asBoth, got, "plan-b-by-requester", planB.Digest); err != nil {
		t.Fatal(err)
	}
	// The refusal shows once Annex has seen both Approvals (the cache
	// receives them in order).
	got = waitPending(t, got, v1alpha1.ReasonApprovalRefused, planA.Digest)
	if got.Status.Change.Digest != planB.Digest || got.Status.Change.Approval.State != v1alpha1.ApprovalPending ||
		len(got.Status.Change.Approval.Refused) != 1 || !strings.Contains(got.Status.Change.Approval.Refused[0], "cannot approve it") {
		t.Fatalf("after a self-approval: %+v", got.Status.Change.Approval)
	}
	if v := configMapVersion(t, ns, "web"); v != "1.0.0" || got.Status.InstalledVersion != "1.0.0" {
		t.Fatalf("an approval of plan A or a self-approval applied something: the cluster has %s's objects", v)
	}

	// The approver's Approval of plan B applies exactly plan B.
	if err := approve(asApprover, got, "plan-b", planB.Digest); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if v := configMapVersion(t, ns, "web"); v != "2.0.0" || got.Status.InstalledVersion != "2.0.0" || got.Status.Change != nil {
		t.Fatalf("after approval: cluster has %s, installed %s, change %+v", v, got.Status.InstalledVersion, got.Status.Change)
	}
	a := &v1alpha1.Approval{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plan-b"}, a); err != nil || a.Spec.Approver != approver {
		t.Fatalf("the API server recorded approver %q (err %v), want %q", a.Spec.Approver, err, approver)
	}
}

// Permission growth on an upgrade needs approval under a
// PermissionGrowth policy, and status.change names the new rules; an
// upgrade that grants nothing new, and an Automatic policy alongside,
// require nothing.
func TestApprovalOfPermissionGrowth(t *testing.T) {
	rbac := map[string]string{"templates/rbac.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .Release.Name }}-secrets
rules:
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .Release.Name }}-secrets
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: {{ .Release.Name }}-secrets}
subjects:
- kind: ServiceAccount
  name: {{ .Release.Name }}
`}
	ns, _ := setup(t, podinfoChart("approvalgrowth", "1.0.0", nil), podinfoChart("approvalgrowth", "1.0.1", nil),
		podinfoChart("approvalgrowth", "1.1.0", rbac))
	approvalPolicy(t, ns, v1alpha1.ApprovalPolicySpec{Require: []v1alpha1.ApprovalRequirement{v1alpha1.ApprovalPermissionGrowth}})
	automatic := &v1alpha1.ApprovalPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-automatic"},
		Spec:       v1alpha1.ApprovalPolicySpec{Selector: v1alpha1.ApprovalSelector{Extensions: []string{"approvalgrowth"}}, Preset: v1alpha1.ApprovalAutomatic},
	}
	if err := env.Client.Create(context.Background(), automatic); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), automatic) })
	asApprover := asUser(t, ns, approver, "approver")

	inst := install(t, ns, "web", "approvalgrowth", "1.0.x")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if got.Status.InstalledVersion != "1.0.1" {
		t.Fatalf("installed %s, want 1.0.1 (no approval needed)", got.Status.InstalledVersion)
	}

	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Version = "1.x"
	if err := env.Client.Patch(context.Background(), got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitPending(t, got, v1alpha1.ReasonApprovalRequired)
	pc := got.Status.Change
	wantGrow := "get, list on secrets namespace " + ns
	if !slices.Contains(pc.PermissionsGrow, wantGrow) || len(pc.Approval.Reasons) != 1 ||
		!strings.HasPrefix(pc.Approval.Reasons[0], "PermissionGrowth: ") || !strings.Contains(pc.Approval.Reasons[0], wantGrow) {
		t.Fatalf("status.change should name %q: grows %q, approval %+v", wantGrow, pc.PermissionsGrow, pc.Approval)
	}
	if _, err := get(t, roleGVK, ns, "web-secrets"); !apierrors.IsNotFound(err) {
		t.Fatalf("the Role was applied before approval: err = %v", err)
	}
	if err := approve(asApprover, got, "growth", pc.Digest); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if got.Status.InstalledVersion != "1.1.0" {
		t.Fatalf("installed %s after approval, want 1.1.0", got.Status.InstalledVersion)
	}
	if _, err := get(t, roleGVK, ns, "web-secrets"); err != nil {
		t.Fatal(err)
	}
}

// crdChangeChart brings a CRD of its own, whose 1.1.0 adds a field.
func crdChangeChart(version string) helmrepo.Chart {
	field := ""
	if version != "1.0.0" {
		field = "\n              color: {type: string}"
	}
	return helmrepo.Chart{Name: "approvalcrd", Version: version, Files: map[string]string{
		"crds/gadget.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.approval.annex.dev
spec:
  group: approval.annex.dev
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}` + field + "\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  version: {{ .Chart.Version | quote }}\n",
	}}
}

// Under a CRDChange policy, a first install that creates a CRD and a
// patch upgrade that changes it both wait for approval, and
// status.change.approval names the CRD and what changed in it.
func TestApprovalOfCRDChange(t *testing.T) {
	ns, _ := setup(t, crdChangeChart("1.0.0"), crdChangeChart("1.0.1"))
	approvalPolicy(t, ns, v1alpha1.ApprovalPolicySpec{Require: []v1alpha1.ApprovalRequirement{v1alpha1.ApprovalCRDChange}})
	asApprover := asUser(t, ns, approver, "approver")

	inst := install(t, ns, "gadgets", "approvalcrd", "1.0.0")
	got := waitPending(t, inst, v1alpha1.ReasonApprovalRequired)
	if a := got.Status.Change.Approval; !slices.Equal(a.CRDChanges, []string{"creates CustomResourceDefinition gadgets.approval.annex.dev"}) {
		t.Fatalf("first install: %+v", a)
	}
	if err := approve(asApprover, got, "install", got.Status.Change.Digest); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)

	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Version = "1.0.1"
	if err := env.Client.Patch(context.Background(), got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitPending(t, got, v1alpha1.ReasonApprovalRequired)
	want := "changes CustomResourceDefinition gadgets.approval.annex.dev (spec.versions)"
	if a := got.Status.Change.Approval; !slices.Equal(a.CRDChanges, []string{want}) || !slices.Equal(a.Reasons, []string{"CRDChange: " + want}) {
		t.Fatalf("upgrade: %+v", a)
	}
	if v := configMapVersion(t, ns, "gadgets"); v != "1.0.0" {
		t.Fatalf("before approval the cluster has %s's objects", v)
	}
	if err := approve(asApprover, got, "upgrade", got.Status.Change.Digest); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if got.Status.InstalledVersion != "1.0.1" {
		t.Fatalf("installed %s after approval, want 1.0.1", got.Status.InstalledVersion)
	}
}

// A denied change: an approver's Approval with decision Deny stops the
// change with reason ApprovalDenied, quoting the reason, and nothing of
// it is applied; an Approve of the same digest does not outweigh it;
// deleting the denial has the change reviewed again, and the Approve
// then applies it.
func TestApprovalDenied(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, podinfoChart("approvaldeny", "1.0.0", nil), podinfoChart("approvaldeny", "2.0.0", nil))
	approvalPolicy(t, ns, v1alpha1.ApprovalPolicySpec{Require: []v1alpha1.ApprovalRequirement{v1alpha1.ApprovalMajor}})
	asRequester := asUser(t, ns, requester, "requester")
	asApprover := asUser(t, ns, approver, "approver")
	asBoth := asUser(t, ns, both, "requester", "approver")

	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "approvaldeny", Version: "1.x"},
	}
	if err := asRequester.Create(ctx, inst); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Version = "2.x"
	if err := asRequester.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitPending(t, got, v1alpha1.ReasonApprovalRequired)
	digest := got.Status.Change.Digest

	denial := &v1alpha1.Approval{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no"},
		Spec: v1alpha1.ApprovalSpec{Installation: "web", Digest: digest, Decision: v1alpha1.DecisionDeny,
			Reason: "no major upgrades during the freeze"},
	}
	if err := asApprover.Create(ctx, denial); err != nil {
		t.Fatal(err)
	}
	if err := approve(asBoth, got, "yes", digest); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonApprovalDenied)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	if !strings.Contains(ready.Message, approver+" denied approvaldeny changing 1.0.0 → 2.0.0") ||
		!strings.Contains(ready.Message, "no major upgrades during the freeze") {
		t.Fatalf("Ready message: %s", ready.Message)
	}
	if a := got.Status.Change.Approval; a.State != v1alpha1.ApprovalDenied || a.DeniedBy != approver || a.ApprovedBy != "" {
		t.Fatalf("status.change.approval: %+v", a)
	}
	if meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionStalled) == false {
		t.Fatalf("a denied change is Stalled (a person must act): %+v", got.Status.Conditions)
	}
	if v := configMapVersion(t, ns, "web"); v != "1.0.0" || got.Status.InstalledVersion != "1.0.0" {
		t.Fatalf("a denied change applied something: the cluster has %s's objects", v)
	}

	// Deleting the denial has the change reviewed again: the Approve of
	// the same digest, by someone other than the requester, applies it.
	if err := env.Client.Delete(ctx, denial); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if v := configMapVersion(t, ns, "web"); v != "2.0.0" {
		t.Fatalf("after the denial was withdrawn: the cluster has %s's objects, want 2.0.0's", v)
	}
}

// profileWriter returns a client for user, who may write ExtensionProfiles
// (a ClusterRole of the test's own: Annex ships none) and nothing else.
func profileWriter(t *testing.T, user string) client.Client {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "approval-test-profile-writer"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"extensionprofiles"},
		Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
	}}}
	if err := env.Client.Create(ctx, role); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	return asUser(t, "", user)
}

// The API server records who changed a profile and who approves a step
// of its rollout, as for installations: creating or changing a profile's
// spec stamps the user into annex.dev/requested-by, a forged value does
// not stick; a user who may write profiles but not Approvals is refused
// by RBAC; an Approval of a step records its creator as approver, and
// the approval rules (gate.StepApproval) then count it.
func TestProfileRequesterAndStepApprover(t *testing.T) {
	ctx := context.Background()
	const alice, carol, bob = "profile-test-alice", "profile-test-carol", "profile-test-bob"
	ns := "profile-approval"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	asAlice, asCarol := profileWriter(t, alice), profileWriter(t, carol)
	asBob := asUser(t, ns, bob, "rollout-approver")
	requestedBy := func(p *v1alpha1.ExtensionProfile) string { return p.Annotations[v1alpha1.AnnotationRequestedBy] }

	// Created by alice, who claims bob asked for it: alice is recorded.
	p := &v1alpha1.ExtensionProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "approval-test", Annotations: map[string]string{v1alpha1.AnnotationRequestedBy: bob}},
		Spec: v1alpha1.ExtensionProfileSpec{
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"approval-test": "no-cluster-has-this"}},
			Namespace:       ns,
			Extensions:      []v1alpha1.ProfileExtension{{Name: "podinfo"}},
		},
	}
	if err := asAlice.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if by := requestedBy(p); by != alice {
		t.Fatalf("the API server recorded %q as the profile's requester, want %q", by, alice)
	}

	// A write that leaves the spec alone keeps the requester, whatever it
	// claims.
	patch := client.MergeFrom(p.DeepCopy())
	p.Annotations[v1alpha1.AnnotationRequestedBy] = carol
	if err := asAlice.Patch(ctx, p, patch); err != nil {
		t.Fatal(err)
	}
	if by := requestedBy(p); by != alice {
		t.Fatalf("requested-by became %q by a metadata write, want %q kept", by, alice)
	}

	// carol changes the spec: she is the requester now.
	patch = client.MergeFrom(p.DeepCopy())
	p.Spec.Rollout = &v1alpha1.RolloutStrategy{Steps: []v1alpha1.RolloutStep{{Name: "canary", RequireApproval: true}}}
	if err := asCarol.Patch(ctx, p, patch); err != nil {
		t.Fatal(err)
	}
	if by := requestedBy(p); by != carol {
		t.Fatalf("after carol changed the spec the requester is %q", by)
	}

	// RBAC: who may write profiles (and not Approvals) may not approve.
	step := func(name, approver string) *v1alpha1.Approval {
		return &v1alpha1.Approval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.ApprovalSpec{Profile: p.Name, Revision: 1, Step: "canary", Approver: approver}}
	}
	if err := asCarol.Create(ctx, step("by-carol", "")); !apierrors.IsForbidden(err) {
		t.Fatalf("a profile writer without the approval permission created an Approval: err = %v", err)
	}

	// bob approves, claiming to be carol: bob is recorded.
	a := step("by-bob", carol)
	if err := asBob.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a.Spec.Approver != bob {
		t.Fatalf("the API server recorded approver %q, want %q", a.Spec.Approver, bob)
	}

	// What Annex reads back counts under the approval rules.
	var approvals v1alpha1.ApprovalList
	if err := env.Client.List(ctx, &approvals, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	d := gate.StepApproval(approvals.Items, p.Name, 1, "canary", requestedBy(p))
	if d.State != v1alpha1.ApprovalApproved || d.ApprovedBy != bob {
		t.Fatalf("the step's approval: %+v, want approved by %s", d, bob)
	}
}
