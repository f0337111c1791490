// Package rollout decides how a profile revision reaches the profile's
// clusters: in ordered steps, each with a failure budget, a timeout, a soak
// time and an optional approval; never more than maxConcurrent clusters
// changing at once; clusters changed only inside their maintenance windows;
// a halted revision rolled back. Decide is pure: it takes what the profile
// controller observed and the state it last wrote, and returns the next
// state and the clusters to change. Its place in the rollout lives in the
// state (the profile's status.rollout), so a restarted manager resumes at
// the same step and never changes a cluster outside it.
package rollout

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// DefaultTimeout is how long a cluster may take to be Ready with a
// revision when its step names no timeout.
const DefaultTimeout = 10 * time.Minute

// RestStep names the implicit last step that takes the clusters no step
// chose, and AllStep the single step of the default strategy.
const (
	RestStep = "rest"
	AllStep  = "all"
)

// MaxNamed bounds the failures and waits the status names.
const MaxNamed = 10

// Health is how a cluster's installations of the profile stand with the
// revision they were last written from.
type Health int

const (
	// Progressing: not every installation is Ready with its spec yet.
	Progressing Health = iota
	// Ready: every installation is Ready with its current spec.
	Ready
	// Failed: an installation failed for good (refused, a hook said no,
	// rolled back, stalled); it will not become Ready without a change.
	Failed
)

// Cluster is one cluster the profile selects, as the profile controller
// observed it.
type Cluster struct {
	// Name of the ManagedCluster; "" is the hub.
	Name   string
	Labels map[string]string
	// Reachable is false while the cluster's API server does not answer.
	Reachable bool
	// Window is the cluster's maintenance window now (open when it
	// declares none); WindowErr says why its windows cannot be read.
	Window    WindowState
	WindowErr error
	// Revision is the profile revision the cluster's installations were
	// last written from (0: none, or written before revisions existed),
	// and Previous the one before it.
	Revision, Previous int64
	// Partial is set when the installations disagree on Revision (a
	// change was cut short): Revision is the highest, and the change is
	// finished before anything else.
	Partial bool
	// Changed is set when the newest revision wrote to the cluster; a
	// cluster that holds it without a write (the revision changes
	// nothing there) has nothing to roll back.
	Changed bool
	// ChangedAt is when the profile last wrote the cluster's
	// installations.
	ChangedAt time.Time
	// Health of the installations at Revision; Extension, Reason and
	// Message say which installation is not Ready, and why.
	Health                     Health
	Extension, Reason, Message string
}

// Input is what one Decision is made from.
type Input struct {
	// Profile names the profile, for the messages.
	Profile string
	Now     time.Time
	// Strategy is the profile's spec.rollout; nil is AllAtOnce.
	Strategy *v1alpha1.RolloutStrategy
	// Revision is the profile's newest revision, and IgnoreWindows its
	// emergency override.
	Revision      int64
	IgnoreWindows bool
	// State is the status.rollout written last; nil before the first.
	State *v1alpha1.RolloutStatus
	// Clusters are the clusters the profile selects.
	Clusters []Cluster
	// Approved reports whether a step of Revision may start; Denied
	// whether an approver refused it (with why).
	Approved func(step string) bool
	Denied   func(step string) (bool, string)
	// Abort is set when `annexctl rollout abort` named Revision.
	Abort bool
}

// Move is one cluster to write from revision To (0: remove the profile's
// installations from it).
type Move struct {
	Cluster string
	To      int64
}

// Event is something the rollout did, to record on the profile.
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// Decision is what Decide decides: what to do now.
type Decision struct {
	// State is the status.rollout to write before any Move is carried out.
	State v1alpha1.RolloutStatus
	Moves []Move
	// Events happened in this step of the state machine.
	Events []Event
	// RequeueAfter is when the decision changes with time alone (a timeout,
	// the end of a soak, a window opening); 0: only an event changes it.
	RequeueAfter time.Duration
}

// step is a resolved step of the strategy.
type step struct {
	name            string
	timeout, soak   time.Duration
	requireApproval bool
	budget          int // failures allowed
	neverHalts      bool
	members         []int // indexes in Input.Clusters
}

// Decide decides the next state of the rollout of in.Revision.
func Decide(in Input) Decision {
	st := start(in)
	steps, stepOf := assign(in)
	st.Steps = int32(len(steps))
	p := &decider{in: in, st: st, steps: steps, stepOf: stepOf}
	p.run()
	return Decision{State: p.st, Moves: p.moves, Events: p.events, RequeueAfter: p.requeue}
}

// start is the state to continue from: the one written, or a new rollout
// when the profile has a newer revision.
func start(in Input) v1alpha1.RolloutStatus {
	strategy := "Steps"
	if in.Strategy == nil {
		strategy = "AllAtOnce"
	}
	if in.State != nil && in.State.Revision == in.Revision {
		st := *in.State.DeepCopy()
		st.Strategy = strategy
		return st
	}
	st := v1alpha1.RolloutStatus{Strategy: strategy, Revision: in.Revision, Phase: v1alpha1.RolloutProgressing,
		StepStartedAt: ptr(metav1.NewTime(in.Now))}
	if in.State != nil {
		st.StableRevision = in.State.StableRevision
		if in.State.Phase == v1alpha1.RolloutComplete {
			st.StableRevision = in.State.Revision
		}
	}
	return st
}

// assign resolves the strategy's steps and puts each cluster in the first
// step that chooses it. Clusters are taken in the order of their names'
// hashes, the same for every revision.
func assign(in Input) ([]step, []int) {
	order := make([]int, len(in.Clusters))
	for i := range order {
		order[i] = i
	}
	hashes := make([]uint64, len(in.Clusters))
	for i, c := range in.Clusters {
		h := fnv.New64a()
		h.Write([]byte(c.Name))
		hashes[i] = h.Sum64()
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(hashes[a], hashes[b]), strings.Compare(in.Clusters[a].Name, in.Clusters[b].Name))
	})
	rank := make([]int, len(in.Clusters)) // cluster → its place in order
	for n, i := range order {
		rank[i] = n
	}
	stepOf := make([]int, len(in.Clusters))
	for i := range stepOf {
		stepOf[i] = -1
	}
	if in.Strategy == nil {
		s := step{name: AllStep, timeout: DefaultTimeout, neverHalts: true, members: order}
		for _, i := range order {
			stepOf[i] = 0
		}
		return []step{s}, stepOf
	}
	var steps []step
	remaining := order
	for _, rs := range in.Strategy.Steps {
		s := step{name: rs.Name, timeout: duration(rs.Timeout, DefaultTimeout), soak: duration(rs.SoakTime, 0),
			requireApproval: rs.RequireApproval}
		var chosen, rest []int
		sel := selector(rs.ClusterSelector)
		for _, i := range remaining {
			if sel.Matches(labels.Set(in.Clusters[i].Labels)) {
				chosen = append(chosen, i)
			} else {
				rest = append(rest, i)
			}
		}
		if n := count(rs.Clusters, len(chosen)); n < len(chosen) {
			// A count takes the clusters the revision already reached
			// first (so a step keeps its members), and unreachable ones
			// last (a canary that cannot be reached tells nothing).
			slices.SortStableFunc(chosen, func(a, b int) int { return tier(in, a) - tier(in, b) })
			rest = append(rest, chosen[n:]...)
			chosen = chosen[:n]
			slices.SortFunc(rest, func(a, b int) int { return rank[a] - rank[b] })
		}
		s.members, remaining = chosen, rest
		s.budget = budget(rs.MaxUnavailable, len(chosen))
		steps = append(steps, s)
	}
	last := in.Strategy.Steps[len(in.Strategy.Steps)-1]
	if len(remaining) > 0 {
		steps = append(steps, step{name: RestStep, timeout: duration(last.Timeout, DefaultTimeout),
			budget: budget(last.MaxUnavailable, len(remaining)), members: remaining})
	}
	for k, s := range steps {
		for _, i := range s.members {
			stepOf[i] = k
		}
	}
	return steps, stepOf
}

// tier orders a step's candidates: reached by the revision, reachable,
// unreachable.
func tier(in Input, i int) int {
	switch c := in.Clusters[i]; {
	case c.Revision == in.Revision:
		return 0
	case c.Reachable:
		return 1
	}
	return 2
}

func selector(ls *metav1.LabelSelector) labels.Selector {
	if ls == nil {
		return labels.Everything()
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing() // refused by the API server's validation; never matches
	}
	return sel
}

// count is how many of n clusters a step takes: a count, or a percentage
// rounded up and at least one.
func count(v *intstr.IntOrString, n int) int {
	if v == nil {
		return n
	}
	k, err := intstr.GetScaledValueFromIntOrPercent(v, n, true)
	if err != nil {
		return n // refused by the API server's validation
	}
	if k == 0 && n > 0 && v.Type == intstr.String && v.StrVal != "0%" {
		k = 1
	}
	return min(max(k, 0), n)
}

// budget is how many of a step's n clusters may fail: a count, or a
// percentage rounded down.
func budget(v *intstr.IntOrString, n int) int {
	if v == nil {
		return 0
	}
	k, err := intstr.GetScaledValueFromIntOrPercent(v, n, false)
	if err != nil {
		return 0
	}
	return max(k, 0)
}

// MaxConcurrent resolves spec.rollout.maxConcurrent against the number of
// selected clusters (rounded up, at least one); 0 means no limit.
func MaxConcurrent(v *intstr.IntOrString, n int) int {
	if v == nil {
		return 0
	}
	k, err := intstr.GetScaledValueFromIntOrPercent(v, n, true)
	if err != nil {
		return 0
	}
	return max(k, 1)
}

func duration(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.Duration
}

func ptr[T any](v T) *T { return &v }
