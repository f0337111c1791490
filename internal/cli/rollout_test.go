package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv"
)

// rolloutFixture writes the profile "base" (spec.namespace "fleet",
// steps canary, prod with approval, then the implicit rest), its status
// as the manager would write it — revision 2 waits for the approval of
// step prod, revision 1 is stable — and its two revisions as
// ControllerRevisions, the second with a hash-shortened name, plus a
// revision of another profile and the profile "flat" without
// spec.rollout. It returns the profile as written.
func rolloutFixture(t *testing.T, env *testenv.Env) *v1alpha1.ExtensionProfile {
	t.Helper()
	ctx := context.Background()
	c := env.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}); err != nil {
		t.Fatal(err)
	}
	one, half := intstr.FromInt32(1), intstr.FromString("50%")
	p := &v1alpha1.ExtensionProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "base", Annotations: map[string]string{v1alpha1.AnnotationChangeCause: "podinfo 6.5.0"}},
		Spec: v1alpha1.ExtensionProfileSpec{
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			Namespace:       "fleet",
			Extensions: []v1alpha1.ProfileExtension{
				{Name: "podinfo", Version: "^6"},
				{Name: "cert-manager", Version: "~1.15", Mode: v1alpha1.ProfileModeEnforced},
			},
			Rollout: &v1alpha1.RolloutStrategy{Steps: []v1alpha1.RolloutStep{
				{Name: "canary", Clusters: &one, SoakTime: &metav1.Duration{Duration: 30 * time.Minute}},
				{Name: "prod", Clusters: &half, MaxUnavailable: &one, RequireApproval: true,
					ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}},
					Timeout:         &metav1.Duration{Duration: time.Hour + 30*time.Minute}},
			}},
		},
	}
	// alice changes the profile (the API server records her as its
	// requester), so that the test's own user may approve its steps.
	if err := asAlice(t, env).Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	until := metav1.NewTime(fixtureTime.Add(10 * time.Hour))
	p.Status = v1alpha1.ExtensionProfileStatus{
		ObservedGeneration: p.Generation, MatchingClusters: 11,
		Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonWaitingApproval, "step prod waits for an Approval"),
			cond(v1alpha1.ConditionReady, metav1.ConditionFalse, "NotReady", "1 of 11 installations is not Ready"),
		},
		Rollout: &v1alpha1.RolloutStatus{
			Strategy: "Steps", Revision: 2, StableRevision: 1, Phase: v1alpha1.RolloutWaitingForApproval,
			Step: 1, StepName: "prod", Steps: 3,
			Counts: v1alpha1.RolloutCounts{Pending: 5, WaitingForApproval: 3, WaitingForWindow: 1, Done: 1, Failed: 1},
			Failures: []v1alpha1.RolloutClusterState{{Cluster: "cluster-7", Step: "canary", Extension: "podinfo",
				Reason: "InstallFailed", Message: "Deployment fleet/podinfo: 0/2 replicas available after 10m"}},
			Waiting:  []v1alpha1.RolloutClusterState{{Cluster: "cluster-9", Step: "prod", Reason: v1alpha1.ReasonWaitingForWindow, Until: &until}},
			HeldBack: 2,
			HeldBackClusters: []v1alpha1.RolloutClusterState{{Cluster: "cluster-1", Extension: "podinfo", Reason: v1alpha1.ReasonKubernetesVersion,
				Message: `podinfo 6.7.0 needs Kubernetes >=1.37.0-0 and the cluster runs 1.36.4: it gets 6.6.0, the highest version within "6.x" that fits`}},
			Message: "step prod waits for an Approval naming profile base, revision 2, step prod: annexctl rollout approve base",
		},
	}
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	revision(t, c, "base", "base-1", 1, "initial", []v1alpha1.ProfileRevisionExtension{
		{ProfileExtension: v1alpha1.ProfileExtension{Name: "podinfo", Version: "^6"}, Target: "6.4.0"},
		{ProfileExtension: v1alpha1.ProfileExtension{Name: "cert-manager", Version: "~1.15", Mode: v1alpha1.ProfileModeEnforced}},
	})
	revision(t, c, "base", "base-5f2c81d0", 2, "podinfo 6.5.0", []v1alpha1.ProfileRevisionExtension{
		{ProfileExtension: v1alpha1.ProfileExtension{Name: "podinfo", Version: "^6"}, Target: "6.5.0"},
		{ProfileExtension: v1alpha1.ProfileExtension{Name: "cert-manager", Version: "~1.15", Mode: v1alpha1.ProfileModeEnforced}, Target: "1.15.3"},
	})
	revision(t, c, "other", "other-1", 1, "", []v1alpha1.ProfileRevisionExtension{
		{ProfileExtension: v1alpha1.ProfileExtension{Name: "nginx", Version: "*"}, Target: "4.0.0"},
	})
	flat := &v1alpha1.ExtensionProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "flat"},
		Spec: v1alpha1.ExtensionProfileSpec{IncludeHub: true, Namespace: "fleet",
			Extensions: []v1alpha1.ProfileExtension{{Name: "podinfo"}}},
	}
	if err := c.Create(ctx, flat); err != nil {
		t.Fatal(err)
	}
	return p
}

// revision writes a profile revision as the manager does: a
// ControllerRevision in namespace fleet labelled with the profile.
func revision(t *testing.T, c client.Client, profile, name string, n int64, cause string, exts []v1alpha1.ProfileRevisionExtension) {
	t.Helper()
	data, err := json.Marshal(v1alpha1.ProfileRevisionData{Extensions: exts})
	if err != nil {
		t.Fatal(err)
	}
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name, Labels: map[string]string{v1alpha1.LabelProfile: profile}},
		Revision:   n, Data: runtime.RawExtension{Raw: data},
	}
	if cause != "" {
		cr.Annotations = map[string]string{v1alpha1.AnnotationChangeCause: cause}
	}
	if err := c.Create(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
}

// setRollout rewrites the profile's status.rollout through the status
// subresource, as the manager would.
func setRollout(t *testing.T, c client.Client, name string, change func(*v1alpha1.ExtensionProfileStatus)) {
	t.Helper()
	p := &v1alpha1.ExtensionProfile{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
		t.Fatal(err)
	}
	change(&p.Status)
	if err := c.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func getProfile(t *testing.T, c client.Client, name string) *v1alpha1.ExtensionProfile {
	t.Helper()
	p := &v1alpha1.ExtensionProfile{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// status and history print the profile's rollout and its revisions
// (found by label, whatever their names) from the cluster's state.
func TestRolloutReads(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	rolloutFixture(t, env)

	v, err := cli.Rollout(ctx, env.Client, "base")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := cli.WriteRollout(&out, cli.OutputTable, v); err != nil {
		t.Fatal(err)
	}
	golden(t, "cli/rollout-status.txt", out.Bytes())
	out.Reset()
	if err := cli.WriteRollout(&out, cli.OutputJSON, v); err != nil {
		t.Fatal(err)
	}
	var back cli.RolloutView
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Counts.WaitingForApproval != 3 || back.StepName != "prod" || len(back.Steps) != 3 || back.Steps[2].Name != "rest" || !back.Steps[2].Implicit {
		t.Errorf("-o json: %+v", back)
	}

	// The profile without spec.rollout, before the manager looked at it.
	v, err = cli.Rollout(ctx, env.Client, "flat")
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := cli.WriteRollout(&out, cli.OutputTable, v); err != nil {
		t.Fatal(err)
	}
	if want := "profile flat (namespace fleet)\n  strategy:  AllAtOnce\n  no revision yet: the manager has not rolled out the profile (status.rollout is empty)\n"; out.String() != want {
		t.Errorf("status of flat:\n%s\nwant\n%s", out.String(), want)
	}
	if _, err := cli.Rollout(ctx, env.Client, "nope"); err == nil || !strings.Contains(err.Error(), `no ExtensionProfile "nope"`) {
		t.Errorf("status of a missing profile: %v", err)
	}

	revs, err := cli.RolloutHistory(ctx, env.Client, cli.RolloutHistoryOptions{Profile: "base"})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := cli.WriteRolloutHistory(&out, cli.OutputTable, "base", revs); err != nil {
		t.Fatal(err)
	}
	golden(t, "cli/rollout-history.txt", out.Bytes())

	revs, err = cli.RolloutHistory(ctx, env.Client, cli.RolloutHistoryOptions{Profile: "base", Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := cli.WriteRevision(&out, cli.OutputTable, "base", revs[0]); err != nil {
		t.Fatal(err)
	}
	golden(t, "cli/rollout-revision-1.txt", out.Bytes())
	if _, err := cli.RolloutHistory(ctx, env.Client, cli.RolloutHistoryOptions{Profile: "base", Revision: 7}); err == nil ||
		!strings.Contains(err.Error(), "profile base has no revision 7; it keeps revisions 1, 2") {
		t.Errorf("history --revision 7: %v", err)
	}
	if _, err := cli.RolloutHistory(ctx, env.Client, cli.RolloutHistoryOptions{Profile: "flat", Revision: 1}); err == nil ||
		!strings.Contains(err.Error(), "profile flat has no revisions yet") {
		t.Errorf("history --revision 1 of a profile without revisions: %v", err)
	}
}

// approve creates the Approval of the step the rollout waits at, or of
// the step and revision named, in the profile's spec.namespace; it
// refuses steps without requireApproval, unknown steps and revisions,
// and a rollout that waits for no approval.
func TestRolloutApprove(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	p := rolloutFixture(t, env)
	var out bytes.Buffer
	approve := func(o cli.RolloutApproveOptions) error {
		out.Reset()
		o.Profile, o.Out = "base", &out
		return cli.ApproveRolloutStep(ctx, env.Client, o)
	}

	if err := approve(cli.RolloutApproveOptions{}); err != nil {
		t.Fatal(err)
	}
	a := &v1alpha1.Approval{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "base-r2-prod"}, a); err != nil {
		t.Fatal(err)
	}
	if a.Spec.Profile != "base" || a.Spec.Revision != 2 || a.Spec.Step != "prod" || a.Spec.Decision != v1alpha1.DecisionApprove ||
		a.Spec.Approver == "" || a.Spec.Installation != "" || len(a.OwnerReferences) != 1 || a.OwnerReferences[0].UID != p.UID {
		t.Errorf("approval: %+v, owners %+v", a.Spec, a.OwnerReferences)
	}
	if want := "approved as " + a.Spec.Approver + ": Approval fleet/base-r2-prod of step prod of revision 2 of profile base; the manager starts the step\n"; out.String() != want {
		t.Errorf("approve printed %q, want %q", out.String(), want)
	}
	// Again: the Approval exists, nothing more is created.
	if err := approve(cli.RolloutApproveOptions{}); err != nil || !strings.Contains(out.String(), "exists already") {
		t.Errorf("approving twice: %v: %s", err, out.String())
	}

	// A denial of the same step of revision 1, with its reason.
	if err := approve(cli.RolloutApproveOptions{Step: "prod", Revision: 1, Deny: true, Reason: "freeze"}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "base-r1-prod-deny"}, a); err != nil {
		t.Fatal(err)
	}
	if a.Spec.Decision != v1alpha1.DecisionDeny || a.Spec.Reason != "freeze" || a.Spec.Revision != 1 || a.Spec.Step != "prod" {
		t.Errorf("denial: %+v", a.Spec)
	}

	// Whoever last changed the profile cannot approve its rollout (the
	// manager would not count it), but may deny it.
	// (The API server records who changes the spec: the test's user
	// pauses the rollout, and so becomes its requester.)
	me := a.Spec.Approver
	changed := getProfile(t, env.Client, "base")
	changed.Spec.Rollout.Paused = true
	if err := env.Client.Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if err := approve(cli.RolloutApproveOptions{Step: "prod", Revision: 1}); err == nil ||
		!strings.Contains(err.Error(), "you ("+me+") last changed profile base (annotation annex.dev/requested-by): someone else must approve its rollout") {
		t.Errorf("approving one's own change: %v", err)
	}
	changed = getProfile(t, env.Client, "base")
	changed.Spec.Rollout.Paused = false
	if err := asAlice(t, env).Update(ctx, changed); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		o    cli.RolloutApproveOptions
		want string
	}{
		// a step that starts on its own
		{"no approval required", cli.RolloutApproveOptions{Step: "canary"},
			"step canary of profile base requires no approval (spec.rollout.steps[0].requireApproval is false)"},
		// a step the profile does not have
		{"unknown step", cli.RolloutApproveOptions{Step: "staging"},
			`profile base has no step "staging" in spec.rollout.steps; the steps that require approval: prod`},
		// a revision the profile does not keep
		{"unknown revision", cli.RolloutApproveOptions{Step: "prod", Revision: 9},
			"profile base has no revision 9; it keeps revisions 1, 2"},
	} {
		if err := approve(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A profile without steps has nothing to approve.
	if err := cli.ApproveRolloutStep(ctx, env.Client, cli.RolloutApproveOptions{Profile: "flat", Out: &out}); err == nil ||
		!strings.Contains(err.Error(), "profile flat has no spec.rollout") {
		t.Errorf("approve of a profile without steps: %v", err)
	}

	// Once the step started, approve without --step refuses; naming the
	// step approves it ahead of time.
	setRollout(t, env.Client, "base", func(s *v1alpha1.ExtensionProfileStatus) { s.Rollout.Phase = v1alpha1.RolloutProgressing })
	if err := approve(cli.RolloutApproveOptions{}); err == nil ||
		!strings.Contains(err.Error(), "the rollout of revision 2 of profile base waits for no approval (phase Progressing, step prod); to approve a later step ahead of time, name it with --step") {
		t.Errorf("approve while Progressing: %v", err)
	}
	var list v1alpha1.ApprovalList
	if err := env.Client.List(ctx, &list, client.InNamespace("fleet")); err != nil || len(list.Items) != 2 {
		t.Errorf("%d Approvals (%v), want the 2 created above", len(list.Items), err)
	}
}

// pause and resume set and clear spec.rollout.paused, abort sets the
// annotation, and each refuses what it cannot do, saying why.
func TestRolloutPauseResumeAbort(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	rolloutFixture(t, env)
	var out bytes.Buffer

	if err := cli.SetRolloutPaused(ctx, env.Client, "base", true, &out); err != nil {
		t.Fatal(err)
	}
	if p := getProfile(t, env.Client, "base"); !p.Spec.Rollout.Paused || len(p.Spec.Rollout.Steps) != 2 {
		t.Errorf("after pause: spec.rollout %+v", p.Spec.Rollout)
	}
	out.Reset()
	if err := cli.SetRolloutPaused(ctx, env.Client, "base", true, &out); err != nil || out.String() != "the rollout of profile base is paused already (spec.rollout.paused)\n" {
		t.Errorf("pausing twice: %v: %q", err, out.String())
	}
	if err := cli.SetRolloutPaused(ctx, env.Client, "base", false, &out); err != nil {
		t.Fatal(err)
	}
	if p := getProfile(t, env.Client, "base"); p.Spec.Rollout.Paused {
		t.Error("after resume: spec.rollout.paused is still set")
	}
	for _, paused := range []bool{true, false} {
		err := cli.SetRolloutPaused(ctx, env.Client, "flat", paused, &out)
		if err == nil || !strings.Contains(err.Error(), "profile flat has no spec.rollout: it rolls out every change to all its clusters at once") ||
			!strings.Contains(err.Error(), `kubectl patch extensionprofile flat --type merge -p '{"spec":{"rollout":{"steps":[`) {
			t.Errorf("pause=%v of a profile without steps: %v", paused, err)
		}
	}

	out.Reset()
	if err := cli.AbortRollout(ctx, env.Client, "base", &out); err != nil {
		t.Fatal(err)
	}
	if got := getProfile(t, env.Client, "base").Annotations[v1alpha1.AnnotationRolloutAbort]; got != "2" {
		t.Errorf("annotation %s = %q, want 2", v1alpha1.AnnotationRolloutAbort, got)
	}
	if want := "asked the manager to halt the rollout of revision 2 of profile base (annotation annex.dev/rollout-abort=2); it returns the clusters it changed to the revision they ran before (spec.rollout.onFailure Rollback)\n"; out.String() != want {
		t.Errorf("abort printed %q", out.String())
	}
	for _, c := range []struct {
		phase v1alpha1.RolloutPhase
		want  string
	}{
		// nothing under way
		{v1alpha1.RolloutComplete, "the rollout of revision 2 of profile base is Complete: there is nothing to abort; to go back to an earlier revision run annexctl rollout undo base"},
		// halted already, by its budget
		{v1alpha1.RolloutHalted, "the rollout of revision 2 of profile base is Halted already (StepFailed)"},
	} {
		setRollout(t, env.Client, "base", func(s *v1alpha1.ExtensionProfileStatus) {
			s.Rollout.Phase, s.Rollout.HaltReason = c.phase, ""
			if c.phase == v1alpha1.RolloutHalted {
				s.Rollout.HaltReason = v1alpha1.ReasonStepFailed
			}
		})
		if err := cli.AbortRollout(ctx, env.Client, "base", &out); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("abort when %s: %v, want %q", c.phase, err, c.want)
		}
	}
	if err := cli.AbortRollout(ctx, env.Client, "flat", &out); err == nil || !strings.Contains(err.Error(), "profile flat has no rollout yet") {
		t.Errorf("abort before any revision: %v", err)
	}
}

// undo writes the stable revision's extensions, pinned to their targets,
// into spec.extensions with its change-cause; it refuses the revision
// rolled out and one it does not keep, and a profile changed since it
// was read stays as the other writer left it.
func TestRolloutUndo(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	rolloutFixture(t, env)
	var out bytes.Buffer

	for _, c := range []struct {
		to   int64
		want string
	}{
		// the revision rolled out now
		{2, "revision 2 is the one profile base rolls out now (WaitingForApproval); name an earlier one with --to-revision"},
		// a revision not kept
		{5, "profile base has no revision 5; it keeps revisions 1, 2"},
	} {
		if _, err := cli.UndoRollout(ctx, env.Client, cli.RolloutUndoOptions{Profile: "base", ToRevision: c.to, Out: &out}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("undo --to-revision %d: %v, want %q", c.to, err, c.want)
		}
	}

	// Another writer changes the profile between undo's read and its
	// write: the update is refused (optimistic lock), and the profile is
	// as that writer left it.
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	racing := interceptor.NewClient(wc, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			other := getProfile(t, env.Client, obj.GetName())
			other.Spec.Priority = 7
			if err := env.Client.Update(ctx, other); err != nil {
				t.Fatal(err)
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	if _, err := cli.UndoRollout(ctx, racing, cli.RolloutUndoOptions{Profile: "base", Out: &out}); err == nil ||
		!strings.Contains(err.Error(), "ExtensionProfile base changed while undo read it: run annexctl rollout undo base again") {
		t.Errorf("undo racing another writer: %v", err)
	}
	if p := getProfile(t, env.Client, "base"); p.Spec.Priority != 7 || p.Spec.Extensions[0].Version != "^6" {
		t.Errorf("after the refused undo: priority %d, extensions %+v", p.Spec.Priority, p.Spec.Extensions)
	}

	out.Reset()
	to, err := cli.UndoRollout(ctx, env.Client, cli.RolloutUndoOptions{Profile: "base", Out: &out})
	if err != nil || to != 1 {
		t.Fatalf("undo: revision %d, %v", to, err)
	}
	p := getProfile(t, env.Client, "base")
	want := []v1alpha1.ProfileExtension{
		{Name: "podinfo", Version: "6.4.0", Mode: v1alpha1.ProfileModeDefault},
		// no target in revision 1: its range
		{Name: "cert-manager", Version: "~1.15", Mode: v1alpha1.ProfileModeEnforced},
	}
	if !reflect.DeepEqual(p.Spec.Extensions, want) {
		t.Errorf("spec.extensions after undo:\n%+v\nwant\n%+v", p.Spec.Extensions, want)
	}
	if got := p.Annotations[v1alpha1.AnnotationChangeCause]; got != "annexctl rollout undo to revision 1" {
		t.Errorf("change-cause %q", got)
	}
	if wantOut := "profile base: spec.extensions set to revision 1 (podinfo@6.4.0, cert-manager@~1.15); the manager rolls it out as a new revision in the profile's steps (spec.rollout); annexctl rollout status base --wait follows it\n"; out.String() != wantOut {
		t.Errorf("undo printed %q", out.String())
	}
}

// status --wait follows the profile until its rollout ends, and ends as
// kubectl rollout status does: 0 when Complete, and otherwise the exit
// code that says why.
func TestRolloutWait(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	rolloutFixture(t, env)
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	// Waiting for approval: exit code 4 at once, naming the command.
	_, err = cli.WaitRollout(ctx, wc, cli.RolloutWaitOptions{Profile: "base", Timeout: time.Minute})
	if cli.ExitCode(err) != cli.ExitApprovalPending || !strings.Contains(err.Error(), "waits for approval of step prod; someone other than who changed the profile runs: annexctl rollout approve base") {
		t.Errorf("wait at an approval: exit %d: %v", cli.ExitCode(err), err)
	}

	// Progressing, then Complete: every change is reported, and the
	// wait ends with no error.
	setRollout(t, env.Client, "base", func(s *v1alpha1.ExtensionProfileStatus) {
		s.Rollout.Phase, s.Rollout.Counts = v1alpha1.RolloutProgressing, v1alpha1.RolloutCounts{Pending: 5, InProgress: 5, Done: 1}
	})
	var lines []string
	seen := make(chan struct{}, 10)
	done := make(chan error, 1)
	go func() {
		_, err := cli.WaitRollout(ctx, wc, cli.RolloutWaitOptions{Profile: "base", Timeout: time.Minute, OnProgress: func(v *cli.RolloutView) {
			lines = append(lines, cli.RolloutLine(v))
			seen <- struct{}{}
		}})
		done <- err
	}()
	<-seen
	setRollout(t, env.Client, "base", func(s *v1alpha1.ExtensionProfileStatus) {
		s.Rollout.Phase, s.Rollout.Step, s.Rollout.StepName = v1alpha1.RolloutComplete, 2, "rest"
		s.Rollout.StableRevision, s.Rollout.Counts = 2, v1alpha1.RolloutCounts{Done: 11}
	})
	if err := <-done; err != nil {
		t.Fatalf("wait until Complete: %v", err)
	}
	wantLines := []string{
		"revision 2: Progressing, step 2/3 prod: 5 pending, 5 in progress, 1 done",
		"revision 2: Complete, step 3/3 rest: 11 done",
	}
	if !reflect.DeepEqual(lines, wantLines) {
		t.Errorf("progress lines:\n%q\nwant\n%q", lines, wantLines)
	}

	// Halted by the budget: exit code 1 with the reason.
	setRollout(t, env.Client, "base", func(s *v1alpha1.ExtensionProfileStatus) {
		s.Rollout.Phase, s.Rollout.Step, s.Rollout.StepName = v1alpha1.RolloutHalted, 0, "canary"
		s.Rollout.HaltReason, s.Rollout.Message = v1alpha1.ReasonStepFailed, "1 of 1 clusters of step canary failed (budget 0): cluster-7"
	})
	_, err = cli.WaitRollout(ctx, wc, cli.RolloutWaitOptions{Profile: "base", Timeout: time.Minute})
	if want := "the rollout of revision 2 of profile base is Halted at step canary: StepFailed: 1 of 1 clusters of step canary failed (budget 0): cluster-7"; cli.ExitCode(err) != cli.ExitError || err.Error() != want {
		t.Errorf("wait on a halted rollout: exit %d: %v\nwant %s", cli.ExitCode(err), err, want)
	}

	// A status the manager wrote before the latest spec change does not
	// count, however Complete it says it is: the wait runs out (3).
	setRollout(t, env.Client, "base", func(s *v1alpha1.ExtensionProfileStatus) { s.Rollout.Phase = v1alpha1.RolloutComplete })
	if err := cli.SetRolloutPaused(ctx, env.Client, "base", true, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	_, err = cli.WaitRollout(ctx, wc, cli.RolloutWaitOptions{Profile: "base", Timeout: 500 * time.Millisecond})
	var exit *cli.ExitCodeError
	if !errors.As(err, &exit) || exit.Code != cli.ExitNotReady || !strings.Contains(err.Error(), "the rollout of profile base was not Complete within 500ms") {
		t.Errorf("wait on a status older than the spec: %v", err)
	}
}

// RolloutEnded decides where --wait stops from the view alone.
func TestRolloutEnded(t *testing.T) {
	for _, c := range []struct {
		name string
		v    cli.RolloutView
		done bool
		code int
	}{
		// the manager has not made a revision yet
		{"not started", cli.RolloutView{Observed: true}, false, cli.ExitOK},
		// a status older than the spec
		{"not observed", cli.RolloutView{Started: true, Phase: v1alpha1.RolloutComplete}, false, cli.ExitOK},
		// under way
		{"progressing", cli.RolloutView{Started: true, Observed: true, Phase: v1alpha1.RolloutProgressing}, false, cli.ExitOK},
		// soaking is under way too
		{"soaking", cli.RolloutView{Started: true, Observed: true, Phase: v1alpha1.RolloutSoaking}, false, cli.ExitOK},
		// rolling back ends in RolledBack
		{"rolling back", cli.RolloutView{Started: true, Observed: true, Phase: v1alpha1.RolloutRollingBack}, false, cli.ExitOK},
		// done
		{"complete", cli.RolloutView{Started: true, Observed: true, Phase: v1alpha1.RolloutComplete}, true, cli.ExitOK},
		// the budget halted it
		{"halted", cli.RolloutView{Started: true, Observed: true, Phase: v1alpha1.RolloutHalted}, true, cli.ExitError},
		// and it was rolled back
		{"rolled back", cli.RolloutView{Started: true, Observed: true, Phase: v1alpha1.RolloutRolledBack}, true, cli.ExitError},
		// a step waits for an Approval
		{"approval", cli.RolloutView{Started: true, Observed: true, Phase: v1alpha1.RolloutWaitingForApproval}, true, cli.ExitApprovalPending},
		// paused: it will not complete on its own
		{"paused", cli.RolloutView{Started: true, Observed: true, Phase: v1alpha1.RolloutPaused}, true, cli.ExitNotReady},
	} {
		done, err := cli.RolloutEnded(&c.v)
		if done != c.done || cli.ExitCode(err) != c.code {
			t.Errorf("%s: done %v, exit %d (%v); want %v, %d", c.name, done, cli.ExitCode(err), err, c.done, c.code)
		}
	}
}

// UndoTarget picks the stable revision, else the newest one before the
// revision rolled out.
func TestUndoTarget(t *testing.T) {
	for _, c := range []struct {
		name      string
		st        *v1alpha1.RolloutStatus
		revisions []int64
		want      int64
		err       string
	}{
		// the stable revision, even with newer ones in between
		{"stable", &v1alpha1.RolloutStatus{Revision: 5, StableRevision: 3}, []int64{2, 3, 4, 5}, 3, ""},
		// no stable revision yet: the one before
		{"no stable", &v1alpha1.RolloutStatus{Revision: 5}, []int64{2, 3, 4, 5}, 4, ""},
		// the stable one is the one rolled out (Complete): the one before
		{"complete", &v1alpha1.RolloutStatus{Revision: 5, StableRevision: 5}, []int64{3, 5}, 3, ""},
		// the stable revision is no longer kept: the one before
		{"stable pruned", &v1alpha1.RolloutStatus{Revision: 5, StableRevision: 1}, []int64{4, 5}, 4, ""},
		// only the first revision
		{"first", &v1alpha1.RolloutStatus{Revision: 1}, []int64{1}, 0, "profile p keeps no revision before 1"},
		// no rollout at all
		{"no rollout", nil, nil, 0, "profile p has no rollout yet"},
	} {
		got, err := cli.UndoTarget("p", c.st, c.revisions)
		if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %d, %v; want %d, %q", c.name, got, err, c.want, c.err)
		}
	}
}

// The steps of the view carry where each stands.
func TestRolloutOfSteps(t *testing.T) {
	p := &v1alpha1.ExtensionProfile{Spec: v1alpha1.ExtensionProfileSpec{Rollout: &v1alpha1.RolloutStrategy{Steps: []v1alpha1.RolloutStep{{Name: "a"}, {Name: "b"}}}}}
	states := func() string {
		var s []string
		for _, st := range cli.RolloutOf(p).Steps {
			s = append(s, st.Name+"="+st.State)
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		name string
		st   *v1alpha1.RolloutStatus
		want string
	}{
		// before the first revision
		{"none", nil, "a=Pending b=Pending rest=Pending"},
		// at the second step
		{"second", &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Step: 1}, "a=Done b=Current rest=Pending"},
		// at the implicit last step
		{"rest", &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutSoaking, Step: 2}, "a=Done b=Done rest=Current"},
		// complete
		{"complete", &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutComplete, Step: 2}, "a=Done b=Done rest=Done"},
	} {
		p.Status.Rollout = c.st
		if got := states(); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// asAlice returns a client acting as the user alice, a cluster admin.
func asAlice(t *testing.T, env *testenv.Env) client.Client {
	t.Helper()
	b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}}}
	if err := env.Client.Create(context.Background(), b); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
