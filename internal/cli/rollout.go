package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/rollout"
)

// defaultProfileNamespace is spec.namespace when the API server has not
// defaulted it (a profile read before its CRD had the default).
const defaultProfileNamespace = "annex-system"

// RolloutView is where a profile's rollout stands, as `annexctl rollout
// status` prints it and the console's Rollouts pages show it. It is read
// from the profile alone (spec.rollout and status.rollout): its size does
// not grow with the number of clusters.
type RolloutView struct {
	Profile string `json:"profile"`
	// Namespace is the profile's spec.namespace: where its revisions,
	// installations and Approvals are.
	Namespace string `json:"namespace"`
	// Strategy is "Steps" with spec.rollout, else "AllAtOnce".
	Strategy string `json:"strategy"`
	// Paused is spec.rollout.paused; OnFailure spec.rollout.onFailure.
	Paused    bool                          `json:"paused,omitempty"`
	OnFailure v1alpha1.RolloutFailurePolicy `json:"onFailure,omitempty"`
	// Started is false until the manager has made a first revision
	// (status.rollout is empty); the fields below are then zero.
	Started bool `json:"started"`
	// Revision is the revision rolled out, StableRevision the last one
	// whose rollout completed.
	Revision       int64                 `json:"revision,omitempty"`
	StableRevision int64                 `json:"stableRevision,omitempty"`
	Phase          v1alpha1.RolloutPhase `json:"phase,omitempty"`
	// Step is the index of the step in progress (in Steps), StepName its
	// name, StepCount how many steps there are, the implicit "rest" one
	// included.
	Step      int32  `json:"step"`
	StepName  string `json:"stepName,omitempty"`
	StepCount int32  `json:"stepCount,omitempty"`
	// Steps are spec.rollout.steps and the implicit last step "rest",
	// each with where it stands.
	Steps    []RolloutStepView              `json:"steps,omitempty"`
	Counts   v1alpha1.RolloutCounts         `json:"counts"`
	Failures []v1alpha1.RolloutClusterState `json:"failures,omitempty"`
	Waiting  []v1alpha1.RolloutClusterState `json:"waiting,omitempty"`
	// HeldBack counts the clusters held below the revision's target
	// version by their Kubernetes version; HeldBackClusters names up to 10.
	HeldBack         int32                          `json:"heldBack,omitempty"`
	HeldBackClusters []v1alpha1.RolloutClusterState `json:"heldBackClusters,omitempty"`
	HaltReason       string                         `json:"haltReason,omitempty"`
	HaltedAt         *metav1.Time                   `json:"haltedAt,omitempty"`
	Message          string                         `json:"message,omitempty"`
	// AbortRequested is the revision annotation annex.dev/rollout-abort
	// names, when set.
	AbortRequested string `json:"abortRequested,omitempty"`
	// Observed is false while the manager has not yet looked at the
	// profile's latest spec (status.observedGeneration behind).
	Observed bool `json:"observed"`
	// Conditions are the profile's rollout conditions: Progressing,
	// Halted and Complete.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RolloutStepView is one step of a rollout.
type RolloutStepView struct {
	Name string `json:"name"`
	// Clusters is how many clusters the step takes ("all" when unset),
	// Selector its cluster selector ("" when unset).
	Clusters string `json:"clusters"`
	Selector string `json:"selector,omitempty"`
	// MaxUnavailable is its failure budget; Timeout and SoakTime are as
	// spec.rollout.steps[] says, with their defaults.
	MaxUnavailable  string `json:"maxUnavailable"`
	Timeout         string `json:"timeout"`
	SoakTime        string `json:"soakTime,omitempty"`
	RequireApproval bool   `json:"requireApproval,omitempty"`
	// Implicit marks the last step "rest" that no spec names.
	Implicit bool `json:"implicit,omitempty"`
	// State is Done, Current or Pending (for the rollout's revision).
	State string `json:"state"`
}

// Step states of a RolloutStepView.
const (
	StepDone    = "Done"
	StepCurrent = "Current"
	StepPending = "Pending"
)

// RolloutOf is the rollout view of a profile already read; pure.
func RolloutOf(p *v1alpha1.ExtensionProfile) *RolloutView {
	v := &RolloutView{
		Profile: p.Name, Namespace: profileNamespace(p), Strategy: "AllAtOnce",
		AbortRequested: p.Annotations[v1alpha1.AnnotationRolloutAbort],
		Observed:       p.Status.ObservedGeneration >= p.Generation,
	}
	for _, t := range []string{v1alpha1.ConditionProgressing, v1alpha1.ConditionHalted, v1alpha1.ConditionComplete} {
		if c := meta.FindStatusCondition(p.Status.Conditions, t); c != nil {
			v.Conditions = append(v.Conditions, *c)
		}
	}
	if r := p.Spec.Rollout; r != nil {
		v.Strategy, v.Paused, v.OnFailure = "Steps", r.Paused, r.OnFailure
		if v.OnFailure == "" {
			v.OnFailure = v1alpha1.RolloutRollback
		}
	}
	st := p.Status.Rollout
	if st != nil {
		v.Started = true
		v.Revision, v.StableRevision, v.Phase = st.Revision, st.StableRevision, st.Phase
		v.Step, v.StepName, v.StepCount = st.Step, st.StepName, st.Steps
		v.Counts, v.Failures, v.Waiting = st.Counts, st.Failures, st.Waiting
		v.HeldBack, v.HeldBackClusters = st.HeldBack, st.HeldBackClusters
		v.HaltReason, v.HaltedAt, v.Message = st.HaltReason, st.HaltedAt, st.Message
	}
	if r := p.Spec.Rollout; r != nil {
		v.Steps = stepsOf(r, st)
		if v.StepCount == 0 {
			v.StepCount = int32(len(v.Steps))
		}
	}
	return v
}

// stepsOf lists the steps of r and the implicit "rest", each with its
// state in st (all Pending before the first revision, all Done once
// the revision is Complete).
func stepsOf(r *v1alpha1.RolloutStrategy, st *v1alpha1.RolloutStatus) []RolloutStepView {
	out := make([]RolloutStepView, 0, len(r.Steps)+1)
	for _, s := range r.Steps {
		sv := RolloutStepView{Name: s.Name, Clusters: intOrString(s.Clusters, "all"),
			MaxUnavailable: intOrString(s.MaxUnavailable, "0"), Timeout: duration(s.Timeout, "10m"),
			SoakTime: duration(s.SoakTime, ""), RequireApproval: s.RequireApproval}
		if s.ClusterSelector != nil {
			if sel, err := metav1.LabelSelectorAsSelector(s.ClusterSelector); err == nil {
				sv.Selector = sel.String()
			}
		}
		out = append(out, sv)
	}
	last := out[len(out)-1]
	out = append(out, RolloutStepView{Name: rollout.RestStep, Clusters: "every cluster no step chose",
		MaxUnavailable: last.MaxUnavailable, Timeout: last.Timeout, Implicit: true})
	for i := range out {
		switch {
		case st == nil:
			out[i].State = StepPending
		case st.Phase == v1alpha1.RolloutComplete || int32(i) < st.Step:
			out[i].State = StepDone
		case int32(i) == st.Step:
			out[i].State = StepCurrent
		default:
			out[i].State = StepPending
		}
	}
	return out
}

func intOrString(v *intstr.IntOrString, unset string) string {
	if v == nil {
		return unset
	}
	return v.String()
}

func duration(d *metav1.Duration, unset string) string {
	if d == nil {
		return unset
	}
	return shortDuration(d.Duration)
}

// shortDuration prints 10m0s as 10m and 1h30m0s as 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// profileNamespace is the profile's spec.namespace, or its default.
func profileNamespace(p *v1alpha1.ExtensionProfile) string {
	if p.Spec.Namespace == "" {
		return defaultProfileNamespace
	}
	return p.Spec.Namespace
}

// getProfile reads an ExtensionProfile; the error names it and how to
// list them.
func getProfile(ctx context.Context, c client.Reader, name string) (*v1alpha1.ExtensionProfile, error) {
	p := &v1alpha1.ExtensionProfile{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &explained{msg: fmt.Sprintf("no ExtensionProfile %q; list them with kubectl get extensionprofiles", name), err: err}
		}
		return nil, fmt.Errorf("reading ExtensionProfile %s: %w", name, err)
	}
	return p, nil
}

// explained is an API error told in the words of the command: Error is
// msg, and errors.As still finds the API error (a console page answers
// 404 for a missing profile).
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

// Rollout reads one profile (one GET) and returns its rollout view.
func Rollout(ctx context.Context, c client.Reader, profile string) (*RolloutView, error) {
	p, err := getProfile(ctx, c, profile)
	if err != nil {
		return nil, err
	}
	return RolloutOf(p), nil
}

// Rollouts lists every profile's rollout view (one LIST), by name.
func Rollouts(ctx context.Context, c client.Reader) ([]RolloutView, error) {
	var list v1alpha1.ExtensionProfileList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing ExtensionProfiles: %w", err)
	}
	out := make([]RolloutView, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, *RolloutOf(&list.Items[i]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Profile < out[j].Profile })
	return out, nil
}

// RevisionView is one revision of a profile, as `annexctl rollout
// history` prints it.
type RevisionView struct {
	Revision int64 `json:"revision"`
	// Name is the ControllerRevision's (in the profile's spec.namespace).
	Name        string `json:"name"`
	ChangeCause string `json:"changeCause,omitempty"`
	// Extensions are "name@target", or "name@range" when the revision
	// found no catalog version in the range.
	Extensions []string `json:"extensions"`
	// Current marks the revision status.rollout rolls out (with Phase),
	// Stable the last one whose rollout completed.
	Current bool                  `json:"current,omitempty"`
	Phase   v1alpha1.RolloutPhase `json:"phase,omitempty"`
	Stable  bool                  `json:"stable,omitempty"`
	Created time.Time             `json:"created"`
	// Data is the revision in full (history --revision).
	Data *v1alpha1.ProfileRevisionData `json:"data,omitempty"`
}

// ProfileRevisions reads the revisions of a profile: one LIST of the
// ControllerRevisions labelled annex.dev/profile=<profile> in its
// spec.namespace (never by name: long names are shortened), oldest
// first. Errors: the LIST fails, or a revision's data is not a
// ProfileRevisionData (naming the ControllerRevision).
func ProfileRevisions(ctx context.Context, c client.Reader, p *v1alpha1.ExtensionProfile) ([]RevisionView, error) {
	ns := profileNamespace(p)
	var list appsv1.ControllerRevisionList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelProfile: p.Name}); err != nil {
		return nil, fmt.Errorf("listing the revisions of profile %s (ControllerRevisions labelled %s=%s in namespace %s): %w",
			p.Name, v1alpha1.LabelProfile, p.Name, ns, err)
	}
	return RevisionsOf(p, list.Items)
}

// RevisionsOf builds the revision views of a profile from its
// ControllerRevisions, oldest first, marking the current and the stable
// one from status.rollout; pure.
func RevisionsOf(p *v1alpha1.ExtensionProfile, crs []appsv1.ControllerRevision) ([]RevisionView, error) {
	out := make([]RevisionView, 0, len(crs))
	for i := range crs {
		cr := &crs[i]
		data := &v1alpha1.ProfileRevisionData{}
		if err := json.Unmarshal(cr.Data.Raw, data); err != nil {
			return nil, fmt.Errorf("ControllerRevision %s/%s (revision %d of profile %s): data is not a profile revision: %w",
				cr.Namespace, cr.Name, cr.Revision, p.Name, err)
		}
		rv := RevisionView{Revision: cr.Revision, Name: cr.Name, ChangeCause: cr.Annotations[v1alpha1.AnnotationChangeCause],
			Extensions: []string{}, Created: cr.CreationTimestamp.Time, Data: data}
		for _, e := range data.Extensions {
			at := e.Target
			if at == "" {
				at = e.Version
			}
			if at == "" {
				at = "*"
			}
			rv.Extensions = append(rv.Extensions, e.Name+"@"+at)
		}
		if st := p.Status.Rollout; st != nil {
			rv.Current = cr.Revision == st.Revision
			rv.Stable = st.StableRevision != 0 && cr.Revision == st.StableRevision
			if rv.Current {
				rv.Phase = st.Phase
			}
		}
		out = append(out, rv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out, nil
}

// RolloutHistoryOptions configure RolloutHistory.
type RolloutHistoryOptions struct {
	Profile string
	// Revision, when set, selects one revision, printed in full.
	Revision int64
}

// RolloutHistory reads a profile and its revisions (a GET and a LIST).
// Without o.Revision the views carry no Data; with it, only that
// revision is returned, with its Data. Errors: the profile does not
// exist, or has no such revision (naming the ones it has).
func RolloutHistory(ctx context.Context, c client.Reader, o RolloutHistoryOptions) ([]RevisionView, error) {
	p, err := getProfile(ctx, c, o.Profile)
	if err != nil {
		return nil, err
	}
	revs, err := ProfileRevisions(ctx, c, p)
	if err != nil {
		return nil, err
	}
	if o.Revision == 0 {
		for i := range revs {
			revs[i].Data = nil
		}
		return revs, nil
	}
	rv, err := findRevision(p, revs, o.Revision)
	if err != nil {
		return nil, err
	}
	return []RevisionView{*rv}, nil
}

// findRevision is revision n of revs; the error names what there is.
func findRevision(p *v1alpha1.ExtensionProfile, revs []RevisionView, n int64) (*RevisionView, error) {
	for i := range revs {
		if revs[i].Revision == n {
			return &revs[i], nil
		}
	}
	if len(revs) == 0 {
		return nil, fmt.Errorf("profile %s has no revisions yet (no ControllerRevision labelled %s=%s in namespace %s): the manager makes the first when it reconciles the profile",
			p.Name, v1alpha1.LabelProfile, p.Name, profileNamespace(p))
	}
	have := make([]string, 0, len(revs))
	for _, r := range revs {
		have = append(have, fmt.Sprint(r.Revision))
	}
	return nil, fmt.Errorf("profile %s has no revision %d; it keeps revisions %s (spec.revisionHistoryLimit); see annexctl rollout history %s",
		p.Name, n, strings.Join(have, ", "), p.Name)
}

// RolloutDetail is a profile's rollout with its revisions and the
// revision undo goes back to by default: the console's rollout page.
type RolloutDetail struct {
	*RolloutView
	Revisions []RevisionView `json:"revisions,omitempty"`
	// RevisionsError says why the revisions cannot be read (RBAC on
	// controllerrevisions in the profile's namespace).
	RevisionsError string `json:"revisionsError,omitempty"`
	// UndoTo is the revision undo writes back (0: none), and UndoNote
	// why there is none.
	UndoTo   int64  `json:"undoTo,omitempty"`
	UndoNote string `json:"undoNote,omitempty"`
}

// DescribeRollout reads a profile (one GET, which a cache-backed reader
// serves) and its revisions (one LIST, at most
// spec.revisionHistoryLimit); revisions that cannot be read leave
// RevisionsError, not an error. Errors: the profile does not exist.
func DescribeRollout(ctx context.Context, c client.Reader, profile string) (*RolloutDetail, error) {
	p, err := getProfile(ctx, c, profile)
	if err != nil {
		return nil, err
	}
	d := &RolloutDetail{RolloutView: RolloutOf(p)}
	revs, err := ProfileRevisions(ctx, c, p)
	if err != nil {
		d.RevisionsError = err.Error()
		return d, nil
	}
	d.Revisions = revs
	numbers := make([]int64, 0, len(revs))
	for _, rv := range revs {
		numbers = append(numbers, rv.Revision)
	}
	if d.UndoTo, err = UndoTarget(profile, p.Status.Rollout, numbers); err != nil {
		d.UndoNote = err.Error()
	}
	return d, nil
}
