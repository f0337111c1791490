package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
)

// The rollout changes below are what `annexctl rollout` and the
// console's Rollouts page do: each writes one field of the profile (or
// creates one Approval), so that kubectl can do the same, and prints one
// line saying what it did.

// SetRolloutPaused sets (paused) or clears spec.rollout.paused of a
// profile with a merge patch, and says so on out. Errors: the profile
// does not exist, or has no spec.rollout (it rolls out all at once,
// with nothing to pause: the message says how to add steps).
func SetRolloutPaused(ctx context.Context, c client.Client, profile string, paused bool, out io.Writer) error {
	p, err := getProfile(ctx, c, profile)
	if err != nil {
		return err
	}
	verb := "pause"
	if !paused {
		verb = "resume"
	}
	if p.Spec.Rollout == nil {
		return noStepsError(p, verb)
	}
	if p.Spec.Rollout.Paused == paused {
		state := "paused already"
		if !paused {
			state = "not paused"
		}
		fmt.Fprintf(out, "the rollout of profile %s is %s (spec.rollout.paused)\n", profile, state)
		return nil
	}
	patch := client.MergeFrom(p.DeepCopy())
	p.Spec.Rollout.Paused = paused
	if err := c.Patch(ctx, p, patch); err != nil {
		return fmt.Errorf("setting spec.rollout.paused of ExtensionProfile %s: %w", profile, err)
	}
	if paused {
		fmt.Fprintf(out, "paused the rollout of profile %s (spec.rollout.paused: true): no more clusters are changed, those being changed finish; annexctl rollout resume %s goes on\n", profile, profile)
		return nil
	}
	fmt.Fprintf(out, "resumed the rollout of profile %s (spec.rollout.paused removed)\n", profile)
	return nil
}

// noStepsError refuses verb on a profile without spec.rollout.
func noStepsError(p *v1alpha1.ExtensionProfile, verb string) error {
	return fmt.Errorf("profile %s has no spec.rollout: it rolls out every change to all its clusters at once, with nothing to %s; "+
		"to roll out in waves, add steps, e.g. kubectl patch extensionprofile %s --type merge -p '{\"spec\":{\"rollout\":{\"steps\":[{\"name\":\"canary\",\"clusters\":1},{\"name\":\"half\",\"clusters\":\"50%%\"}]}}}'",
		p.Name, verb, p.Name)
}

// AbortRollout sets the profile's annotation annex.dev/rollout-abort to
// the revision status.rollout rolls out: the manager halts that
// revision's rollout and, with spec.rollout.onFailure Rollback, returns
// the clusters it changed to the revision they ran before. Errors: no
// rollout has started, or the rollout is not under way (Complete,
// Halted, RollingBack, RolledBack).
func AbortRollout(ctx context.Context, c client.Client, profile string, out io.Writer) error {
	p, err := getProfile(ctx, c, profile)
	if err != nil {
		return err
	}
	st := p.Status.Rollout
	if st == nil {
		return notStartedError(p)
	}
	switch st.Phase {
	case v1alpha1.RolloutComplete:
		return fmt.Errorf("the rollout of revision %d of profile %s is Complete: there is nothing to abort; to go back to an earlier revision run annexctl rollout undo %s", st.Revision, profile, profile)
	case v1alpha1.RolloutHalted, v1alpha1.RolloutRollingBack, v1alpha1.RolloutRolledBack:
		return fmt.Errorf("the rollout of revision %d of profile %s is %s already (%s); annexctl rollout undo %s rolls out an earlier revision", st.Revision, profile, st.Phase, orDash(st.HaltReason), profile)
	}
	rev := strconv.FormatInt(st.Revision, 10)
	if p.Annotations[v1alpha1.AnnotationRolloutAbort] == rev {
		fmt.Fprintf(out, "the abort of revision %s of profile %s is requested already (annotation %s); the manager halts it\n", rev, profile, v1alpha1.AnnotationRolloutAbort)
		return nil
	}
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[v1alpha1.AnnotationRolloutAbort] = rev
	if err := c.Patch(ctx, p, patch); err != nil {
		return fmt.Errorf("setting annotation %s of ExtensionProfile %s: %w", v1alpha1.AnnotationRolloutAbort, profile, err)
	}
	then := "leaves the clusters it changed as they are (spec.rollout.onFailure Pause)"
	if p.Spec.Rollout == nil || p.Spec.Rollout.OnFailure != v1alpha1.RolloutPause {
		then = "returns the clusters it changed to the revision they ran before (spec.rollout.onFailure Rollback)"
	}
	fmt.Fprintf(out, "asked the manager to halt the rollout of revision %s of profile %s (annotation %s=%s); it %s\n",
		rev, profile, v1alpha1.AnnotationRolloutAbort, rev, then)
	return nil
}

func notStartedError(p *v1alpha1.ExtensionProfile) error {
	return fmt.Errorf("profile %s has no rollout yet (status.rollout is empty): the manager has not made a revision of it; is the manager running? (kubectl get extensionprofile %s -o yaml)", p.Name, p.Name)
}

// RolloutApproveOptions configure ApproveRolloutStep.
type RolloutApproveOptions struct {
	Profile string
	// Step defaults to status.rollout.stepName when the rollout waits for
	// approval; Revision defaults to status.rollout.revision.
	Step     string
	Revision int64
	// Deny creates the Approval with decision Deny, with Reason.
	Deny   bool
	Reason string
	Out    io.Writer
}

// ApproveRolloutStep creates an Approval, in the profile's
// spec.namespace and owned by the profile, naming the profile, a
// revision and a step of its rollout (spec.rollout.steps[] with
// requireApproval): the manager then starts that step. Its name is
// <profile>-r<revision>-<step> (with -deny for a denial), shortened by
// names.Bounded. Errors: no rollout, the rollout waits for no approval
// and no step is named, the step does not exist or requires no
// approval, the revision does not exist, the caller last changed the
// profile (annex.dev/requested-by; approving only: the manager would not
// count it), or the API server refuses (RBAC: create on
// approvals.annex.dev in the namespace).
func ApproveRolloutStep(ctx context.Context, c client.Client, o RolloutApproveOptions) error {
	p, err := getProfile(ctx, c, o.Profile)
	if err != nil {
		return err
	}
	if p.Spec.Rollout == nil {
		return noStepsError(p, "approve")
	}
	st := p.Status.Rollout
	if st == nil {
		return notStartedError(p)
	}
	step, rev := o.Step, o.Revision
	if rev == 0 {
		rev = st.Revision
	}
	if step == "" {
		if st.Phase != v1alpha1.RolloutWaitingForApproval {
			return fmt.Errorf("the rollout of revision %d of profile %s waits for no approval (phase %s, step %s); to approve a later step ahead of time, name it with --step",
				st.Revision, o.Profile, st.Phase, orDash(st.StepName))
		}
		step = st.StepName
	}
	i := slices.IndexFunc(p.Spec.Rollout.Steps, func(s v1alpha1.RolloutStep) bool { return s.Name == step })
	if i < 0 {
		have := make([]string, 0, len(p.Spec.Rollout.Steps))
		for _, s := range p.Spec.Rollout.Steps {
			if s.RequireApproval {
				have = append(have, s.Name)
			}
		}
		return fmt.Errorf("profile %s has no step %q in spec.rollout.steps; the steps that require approval: %s", o.Profile, step, orDash(strings.Join(have, ", ")))
	}
	if !p.Spec.Rollout.Steps[i].RequireApproval {
		return fmt.Errorf("step %s of profile %s requires no approval (spec.rollout.steps[%d].requireApproval is false): it starts on its own", step, o.Profile, i)
	}
	if rev != st.Revision {
		revs, err := ProfileRevisions(ctx, c, p)
		if err != nil {
			return err
		}
		if _, err := findRevision(p, revs, rev); err != nil {
			return err
		}
	}
	if requester := p.Annotations[v1alpha1.AnnotationRequestedBy]; !o.Deny && requester != "" {
		if me := WhoAmI(ctx, c); me == requester {
			return fmt.Errorf("you (%s) last changed profile %s (annotation %s): someone else must approve its rollout", me, o.Profile, v1alpha1.AnnotationRequestedBy)
		}
	}
	decision, suffix := v1alpha1.DecisionApprove, ""
	if o.Deny {
		decision, suffix = v1alpha1.DecisionDeny, "-deny"
	}
	ns := profileNamespace(p)
	a := &v1alpha1.Approval{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: names.Bounded(fmt.Sprintf("%s-r%d-%s%s", o.Profile, rev, step, suffix), names.MaxSubdomain),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionProfile", Name: p.Name, UID: p.UID,
			}},
		},
		Spec: v1alpha1.ApprovalSpec{Profile: o.Profile, Revision: rev, Step: step, Decision: decision, Reason: o.Reason},
	}
	what := fmt.Sprintf("step %s of revision %d of profile %s", step, rev, o.Profile)
	err = c.Create(ctx, a)
	switch {
	case apierrors.IsAlreadyExists(err):
		if err := c.Get(ctx, client.ObjectKeyFromObject(a), a); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "Approval %s/%s (%s) of %s exists already (approver %s)\n", a.Namespace, a.Name, a.Spec.Decision, what, a.Spec.Approver)
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the API server refused the Approval: %w; approving a rollout step needs create on approvals.annex.dev in namespace %s (the profile's spec.namespace)", err, ns)
	case err != nil:
		return fmt.Errorf("creating the Approval of %s: %w", what, err)
	}
	if o.Deny {
		fmt.Fprintf(o.Out, "denied as %s: Approval %s/%s (Deny) of %s; the step does not start\n", a.Spec.Approver, a.Namespace, a.Name, what)
		return nil
	}
	fmt.Fprintf(o.Out, "approved as %s: Approval %s/%s of %s; the manager starts the step\n", a.Spec.Approver, a.Namespace, a.Name, what)
	return nil
}

// RolloutUndoOptions configure UndoRollout.
type RolloutUndoOptions struct {
	Profile string
	// ToRevision is the revision to go back to; 0 is UndoTarget's.
	ToRevision int64
	Out        io.Writer
}

// UndoTarget is the revision undo goes back to by default: the stable
// revision when it is set and before the one rolled out, else the
// highest kept revision before it; pure. revisions are the numbers kept.
// The error says why there is none.
func UndoTarget(profile string, st *v1alpha1.RolloutStatus, revisions []int64) (int64, error) {
	if st == nil {
		return 0, fmt.Errorf("profile %s has no rollout yet (status.rollout is empty): there is no earlier revision to go back to", profile)
	}
	if st.StableRevision != 0 && st.StableRevision < st.Revision && slices.Contains(revisions, st.StableRevision) {
		return st.StableRevision, nil
	}
	var best int64
	for _, r := range revisions {
		if r < st.Revision && r > best {
			best = r
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("profile %s keeps no revision before %d (annexctl rollout history %s): there is nothing to undo to", profile, st.Revision, profile)
	}
	return best, nil
}

// UndoExtensions are a revision's extensions as a profile's
// spec.extensions, each version pinned to the revision's Target (exact)
// where it has one, else its range; pure.
func UndoExtensions(data *v1alpha1.ProfileRevisionData) []v1alpha1.ProfileExtension {
	out := make([]v1alpha1.ProfileExtension, 0, len(data.Extensions))
	for _, e := range data.Extensions {
		pe := *e.ProfileExtension.DeepCopy()
		if e.Target != "" {
			pe.Version = e.Target
		}
		out = append(out, pe)
	}
	return out
}

// UndoRollout rolls a profile back to an earlier revision: it writes the
// revision's extensions into spec.extensions (UndoExtensions) and sets
// the annotation kubernetes.io/change-cause to "annexctl rollout undo to
// revision N", with an update that fails if the profile changed since it
// was read. The manager makes that a new revision and rolls it out in
// the profile's steps, like any change. It returns the revision undone
// to. Errors: no earlier revision, the revision is not kept, it is the
// one rolled out now, or the profile changed meanwhile (run it again).
func UndoRollout(ctx context.Context, c client.Client, o RolloutUndoOptions) (int64, error) {
	p, err := getProfile(ctx, c, o.Profile)
	if err != nil {
		return 0, err
	}
	revs, err := ProfileRevisions(ctx, c, p)
	if err != nil {
		return 0, err
	}
	to := o.ToRevision
	if to == 0 {
		numbers := make([]int64, 0, len(revs))
		for _, r := range revs {
			numbers = append(numbers, r.Revision)
		}
		if to, err = UndoTarget(o.Profile, p.Status.Rollout, numbers); err != nil {
			return 0, err
		}
	}
	rv, err := findRevision(p, revs, to)
	if err != nil {
		return 0, err
	}
	if st := p.Status.Rollout; st != nil && st.Revision == to {
		return 0, fmt.Errorf("revision %d is the one profile %s rolls out now (%s); name an earlier one with --to-revision (annexctl rollout history %s)", to, o.Profile, st.Phase, o.Profile)
	}
	p.Spec.Extensions = UndoExtensions(rv.Data)
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[v1alpha1.AnnotationChangeCause] = fmt.Sprintf("annexctl rollout undo to revision %d", to)
	if err := c.Update(ctx, p); err != nil {
		if apierrors.IsConflict(err) {
			return 0, fmt.Errorf("ExtensionProfile %s changed while undo read it: run annexctl rollout undo %s again to undo from what it is now", o.Profile, o.Profile)
		}
		return 0, fmt.Errorf("writing spec.extensions of ExtensionProfile %s: %w", o.Profile, err)
	}
	how := "in the profile's steps (spec.rollout)"
	if p.Spec.Rollout == nil {
		how = "to every cluster at once (the profile has no spec.rollout)"
	}
	fmt.Fprintf(o.Out, "profile %s: spec.extensions set to revision %d (%s); the manager rolls it out as a new revision %s; annexctl rollout status %s --wait follows it\n",
		o.Profile, to, strings.Join(rv.Extensions, ", "), how, o.Profile)
	return to, nil
}
