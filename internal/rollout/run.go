package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// state is where one cluster stands in the rollout of the revision.
type state int

const (
	sPending state = iota
	sEligible
	sInProgress
	sWaitingForWindow
	sWaitingForApproval
	sDone
	sFailed
	sSkipped
	sRolledBack
)

type decider struct {
	in      Input
	st      v1alpha1.RolloutStatus
	steps   []step
	stepOf  []int
	states  []state
	why     []string // per cluster: why it failed or waits
	moves   []Move
	events  []Event
	requeue time.Duration
}

func (p *decider) run() {
	switch p.st.Phase {
	case v1alpha1.RolloutHalted, v1alpha1.RolloutRollingBack, v1alpha1.RolloutRolledBack:
		p.rollback()
		return
	}
	if p.in.Abort {
		p.halt(v1alpha1.ReasonAborted, fmt.Sprintf("aborted (annotation %s)", v1alpha1.AnnotationRolloutAbort))
		p.rollback()
		return
	}
	for {
		k := int(p.st.Step)
		p.classify(k)
		if k >= len(p.steps) {
			p.complete()
			return
		}
		if j, failed := p.overBudget(k); j >= 0 {
			p.halt(v1alpha1.ReasonStepFailed, fmt.Sprintf("step %s: %d failed clusters pass its budget of %d (%s)",
				p.steps[j].name, failed, p.steps[j].budget, p.firstFailure(j)))
			p.rollback()
			return
		}
		s := p.steps[k]
		p.st.StepName = s.name
		if s.requireApproval && !p.approved(s.name) {
			if denied, why := p.denied(s.name); denied {
				p.halt(v1alpha1.ReasonApprovalDenied, fmt.Sprintf("step %s was denied: %s", s.name, why))
				p.rollback()
				return
			}
		}
		if p.stepDone(k) {
			if s.soak > 0 {
				if p.st.SoakingSince == nil {
					p.st.SoakingSince = ptr(metav1.NewTime(p.in.Now))
					p.event(false, "StepSoaking", fmt.Sprintf("revision %d: step %s done; soaking for %s", p.st.Revision, s.name, s.soak))
				}
				if left := p.st.SoakingSince.Add(s.soak).Sub(p.in.Now); left > 0 {
					p.st.Phase = v1alpha1.RolloutSoaking
					p.after(left)
					p.catchUp(k)
					p.finish()
					return
				}
			}
			p.event(false, "StepCompleted", fmt.Sprintf("revision %d: step %s done (%d clusters)", p.st.Revision, s.name, len(s.members)))
			p.st.Step++
			p.st.StepStartedAt = ptr(metav1.NewTime(p.in.Now))
			p.st.SoakingSince = nil
			if int(p.st.Step) < len(p.steps) {
				p.event(false, "StepStarted", fmt.Sprintf("revision %d: step %s started (%d clusters)",
					p.st.Revision, p.steps[p.st.Step].name, len(p.steps[p.st.Step].members)))
			}
			continue
		}
		p.st.SoakingSince = nil
		switch {
		case p.in.Strategy != nil && p.in.Strategy.Paused:
			p.st.Phase = v1alpha1.RolloutPaused
		case s.requireApproval && !p.approved(s.name):
			p.st.Phase = v1alpha1.RolloutWaitingForApproval
		default:
			p.st.Phase = v1alpha1.RolloutProgressing
		}
		p.catchUp(k)
		p.finish()
		return
	}
}

// classify puts every cluster in its state for step k of the revision.
func (p *decider) classify(k int) {
	p.states = make([]state, len(p.in.Clusters))
	p.why = make([]string, len(p.in.Clusters))
	R := p.st.Revision
	for i, c := range p.in.Clusters {
		j := p.stepOf[i]
		switch {
		case c.Revision == R && !c.Partial && c.Health == Ready:
			p.states[i] = sDone
		case c.Revision == R && !c.Partial && c.Health == Failed:
			p.states[i], p.why[i] = sFailed, failure(c)
		case !c.Reachable:
			p.states[i] = sSkipped
		case c.Revision == R && !c.Partial && p.in.Now.Sub(c.ChangedAt) > p.steps[j].timeout:
			p.states[i], p.why[i] = sFailed, fmt.Sprintf("not Ready within the step's timeout of %s: %s", p.steps[j].timeout, failure(c))
		case c.Revision == R:
			p.states[i] = sInProgress
			if !c.Partial {
				p.after(c.ChangedAt.Add(p.steps[j].timeout).Sub(p.in.Now) + time.Second)
			}
		case j > k:
			p.states[i] = sPending
		case c.WindowErr != nil:
			p.states[i], p.why[i] = sWaitingForWindow, c.WindowErr.Error()
		case !c.Window.Open && !p.in.IgnoreWindows:
			p.states[i] = sWaitingForWindow
			p.after(c.Window.Opens.Sub(p.in.Now) + time.Second)
		case j == k && p.steps[j].requireApproval && !p.approved(p.steps[j].name):
			p.states[i] = sWaitingForApproval
		default:
			p.states[i] = sEligible
		}
	}
}

func failure(c Cluster) string {
	parts := []string{}
	if c.Extension != "" {
		parts = append(parts, c.Extension)
	}
	if c.Reason != "" {
		parts = append(parts, c.Reason)
	}
	if c.Message != "" {
		parts = append(parts, c.Message)
	}
	if len(parts) == 0 {
		return "not Ready"
	}
	return strings.Join(parts, ": ")
}

// overBudget returns the first step up to k whose failures pass its
// budget, and how many failed; -1 when none does.
func (p *decider) overBudget(k int) (int, int) {
	for j := 0; j <= k && j < len(p.steps); j++ {
		if p.steps[j].neverHalts {
			continue
		}
		failed := 0
		for _, i := range p.steps[j].members {
			if p.states[i] == sFailed {
				failed++
			}
		}
		if failed > p.steps[j].budget {
			return j, failed
		}
	}
	return -1, 0
}

func (p *decider) firstFailure(j int) string {
	for _, i := range p.steps[j].members {
		if p.states[i] == sFailed {
			return clusterName(p.in.Clusters[i].Name) + ": " + p.why[i]
		}
	}
	return ""
}

// stepDone reports whether every cluster of step k is done, failed within
// the budget, or skipped.
func (p *decider) stepDone(k int) bool {
	for _, i := range p.steps[k].members {
		switch p.states[i] {
		case sDone, sFailed, sSkipped:
		default:
			return false
		}
	}
	return true
}

// catchUp moves the eligible clusters of steps up to k, cut-short changes
// first, within maxConcurrent. A paused rollout only finishes changes cut
// short.
func (p *decider) catchUp(k int) {
	limit := MaxConcurrent(p.maxConcurrent(), len(p.in.Clusters))
	busy := 0
	for i := range p.in.Clusters {
		if p.states[i] == sInProgress {
			busy++
		}
	}
	paused := p.in.Strategy != nil && p.in.Strategy.Paused
	for _, c := range p.in.Clusters {
		if m, ok := cutShort(c, p.st.Revision); ok {
			p.moves = append(p.moves, m)
		}
	}
	if paused {
		return
	}
	for j := 0; j <= k && j < len(p.steps); j++ {
		for _, i := range p.steps[j].members {
			if p.states[i] != sEligible {
				continue
			}
			if limit > 0 && busy >= limit {
				return
			}
			busy++
			p.states[i] = sInProgress
			p.moves = append(p.moves, Move{Cluster: p.in.Clusters[i].Name, To: p.st.Revision})
		}
	}
}

// cutShort is the move that ends the change cut short on c, if any. A change
// to the rollout's revision is finished. A change to or from a revision
// the rollout left behind (a newer revision came, or that revision's
// rollback was cut short) is undone: the cluster returns to the revision
// it ran before, whole, and waits for its step; without a record of that
// revision the change is finished. (Unmoved, a cluster is written from its
// highest revision: a rollback cut short would put the halted revision
// back on it.)
func cutShort(c Cluster, revision int64) (Move, bool) {
	switch {
	case !c.Partial || !c.Reachable:
		return Move{}, false
	case c.Revision != revision && c.Previous > 0:
		return Move{Cluster: c.Name, To: c.Previous}, true
	}
	return Move{Cluster: c.Name, To: c.Revision}, true
}

func (p *decider) maxConcurrent() *intstr.IntOrString {
	if p.in.Strategy == nil {
		return nil
	}
	return p.in.Strategy.MaxConcurrent
}

// complete is the state once every step is done: the revision is stable;
// clusters that join, or come back, get it.
func (p *decider) complete() {
	if p.st.Phase != v1alpha1.RolloutComplete {
		p.event(false, "RolloutComplete", fmt.Sprintf("revision %d is on every reachable cluster", p.st.Revision))
	}
	p.st.Phase = v1alpha1.RolloutComplete
	p.st.StableRevision = p.st.Revision
	p.st.SoakingSince = nil
	p.st.StepName = ""
	p.catchUp(len(p.steps))
	p.finish()
}

// halt stops the rollout for good: no cluster is changed to the revision
// any more.
func (p *decider) halt(reason, why string) {
	p.st.Phase = v1alpha1.RolloutHalted
	p.st.HaltedAt = ptr(metav1.NewTime(p.in.Now))
	p.st.HaltReason = reason + ": " + why
	p.st.SoakingSince = nil
	p.event(true, "RolloutHalted", fmt.Sprintf("revision %d halted: %s", p.st.Revision, p.st.HaltReason))
}

// rollback returns the clusters a halted revision changed to the revision
// each ran before (onFailure Rollback), within maxConcurrent; onFailure
// Pause leaves them.
func (p *decider) rollback() {
	R := p.st.Revision
	p.states = make([]state, len(p.in.Clusters))
	p.why = make([]string, len(p.in.Clusters))
	pause := p.in.Strategy != nil && p.in.Strategy.OnFailure == v1alpha1.RolloutPause
	limit := MaxConcurrent(p.maxConcurrent(), len(p.in.Clusters))
	busy := 0
	var back []int
	for i, c := range p.in.Clusters {
		switch {
		case c.Revision == R && c.Health == Failed && !c.Partial:
			p.states[i], p.why[i] = sFailed, failure(c)
		case c.Revision == R && c.Health == Ready && !c.Partial:
			p.states[i] = sDone
		case c.Revision == R:
			p.states[i] = sInProgress
		case c.Previous == R:
			p.states[i] = sRolledBack
			if c.Health == Progressing && c.Reachable {
				busy++
			}
		default:
			p.states[i] = sPending
		}
		if c.Revision == R && !c.Reachable {
			p.states[i] = sSkipped
		}
		if c.Revision == R && c.Reachable && (c.Changed || c.Partial) {
			back = append(back, i)
		}
	}
	for _, c := range p.in.Clusters {
		if m, ok := cutShort(c, R); ok && c.Revision != R {
			p.moves = append(p.moves, m)
		}
	}
	if pause {
		p.st.Phase = v1alpha1.RolloutHalted
		p.finish()
		return
	}
	for _, i := range back {
		if limit > 0 && busy >= limit {
			break
		}
		busy++
		c := p.in.Clusters[i]
		p.moves = append(p.moves, Move{Cluster: c.Name, To: c.Previous})
	}
	switch {
	case len(back) > 0:
		if p.st.Phase != v1alpha1.RolloutRollingBack {
			p.event(true, "RollingBack", fmt.Sprintf("revision %d: returning %d clusters to the revisions they ran before", R, len(back)))
		}
		p.st.Phase = v1alpha1.RolloutRollingBack
	default:
		if p.st.Phase != v1alpha1.RolloutRolledBack {
			p.event(true, "RolledBack", fmt.Sprintf("revision %d: every cluster it changed runs the revision it ran before", R))
		}
		p.st.Phase = v1alpha1.RolloutRolledBack
	}
	p.finish()
}

func (p *decider) approved(step string) bool { return p.in.Approved != nil && p.in.Approved(step) }

func (p *decider) denied(step string) (bool, string) {
	if p.in.Denied == nil {
		return false, ""
	}
	return p.in.Denied(step)
}

func (p *decider) event(warning bool, reason, msg string) {
	p.events = append(p.events, Event{Warning: warning, Reason: reason, Message: msg})
}

// after asks to decide again in d at the latest.
func (p *decider) after(d time.Duration) {
	d = max(d, time.Second)
	if p.requeue == 0 || d < p.requeue {
		p.requeue = d
	}
}

// finish counts the clusters, names failures and waits, and writes the
// message.
func (p *decider) finish() {
	c := v1alpha1.RolloutCounts{}
	type named struct {
		step, order int
		s           v1alpha1.RolloutClusterState
	}
	var failures, waits []named
	order := map[int]int{}
	for _, s := range p.steps {
		for n, i := range s.members {
			order[i] = n
		}
	}
	for i, s := range p.states {
		cl := p.in.Clusters[i]
		stepName := ""
		if j := p.stepOf[i]; j >= 0 && j < len(p.steps) {
			stepName = p.steps[j].name
		}
		switch s {
		case sPending, sEligible:
			c.Pending++
		case sInProgress:
			c.InProgress++
		case sWaitingForWindow:
			c.WaitingForWindow++
			w := v1alpha1.RolloutClusterState{Cluster: clusterName(cl.Name), Step: stepName, Reason: v1alpha1.ReasonWaitingForWindow}
			if cl.WindowErr != nil {
				w.Message = p.why[i]
			} else {
				w.Until = ptr(metav1.NewTime(cl.Window.Opens))
				w.Message = "its next maintenance window opens at " + cl.Window.Opens.UTC().Format(time.RFC3339)
			}
			waits = append(waits, named{p.stepOf[i], order[i], w})
		case sWaitingForApproval:
			c.WaitingForApproval++
		case sDone:
			c.Done++
		case sFailed:
			c.Failed++
			failures = append(failures, named{p.stepOf[i], order[i], v1alpha1.RolloutClusterState{Cluster: clusterName(cl.Name), Step: stepName,
				Extension: cl.Extension, Reason: cl.Reason, Message: p.why[i]}})
		case sSkipped:
			c.Skipped++
		case sRolledBack:
			c.RolledBack++
		}
	}
	byStep := func(a, b named) int {
		if a.step != b.step {
			return a.step - b.step
		}
		return a.order - b.order
	}
	slices.SortFunc(failures, byStep)
	slices.SortFunc(waits, byStep)
	p.st.Counts = c
	p.st.Failures, p.st.Waiting = nil, nil
	for _, f := range failures[:min(len(failures), MaxNamed)] {
		p.st.Failures = append(p.st.Failures, f.s)
	}
	for _, w := range waits[:min(len(waits), MaxNamed)] {
		p.st.Waiting = append(p.st.Waiting, w.s)
	}
	p.st.Message = p.message()
}

func (p *decider) message() string {
	st := &p.st
	c := st.Counts
	total := len(p.in.Clusters)
	stepText := func() string {
		k := int(st.Step)
		if k >= len(p.steps) {
			return ""
		}
		return fmt.Sprintf("step %d/%d %s (%d clusters, a failure budget of %d)", k+1, len(p.steps), p.steps[k].name,
			len(p.steps[k].members), p.steps[k].budget)
	}
	skipped := ""
	if c.Skipped > 0 {
		skipped = fmt.Sprintf("; %d unreachable clusters are skipped and get it when they answer again", c.Skipped)
	}
	switch st.Phase {
	case v1alpha1.RolloutComplete:
		return fmt.Sprintf("revision %d is on %d of %d clusters%s", st.Revision, c.Done, total, skipped)
	case v1alpha1.RolloutSoaking:
		return fmt.Sprintf("revision %d: %s is done; soaking until %s before the next step%s", st.Revision, stepText(),
			st.SoakingSince.Add(p.steps[st.Step].soak).UTC().Format(time.RFC3339), skipped)
	case v1alpha1.RolloutWaitingForApproval:
		return fmt.Sprintf("revision %d: %s waits for approval: someone other than who last changed the profile runs "+
			"`annexctl rollout approve %s --step %s`", st.Revision, stepText(), p.in.Profile, st.StepName)
	case v1alpha1.RolloutPaused:
		return fmt.Sprintf("revision %d: %s is paused (spec.rollout.paused): `annexctl rollout resume %s` goes on", st.Revision, stepText(), p.in.Profile)
	case v1alpha1.RolloutHalted:
		return fmt.Sprintf("revision %d halted: %s; onFailure Pause leaves its %d changed clusters as they are: "+
			"inspect them, then change the profile or run `annexctl rollout undo %s`", st.Revision, st.HaltReason, c.Done+c.Failed+c.InProgress, p.in.Profile)
	case v1alpha1.RolloutRollingBack:
		return fmt.Sprintf("revision %d halted: %s; returning the clusters it changed to the revisions they ran before (%d returned, %d to go)",
			st.Revision, st.HaltReason, c.RolledBack, c.Done+c.Failed+c.InProgress)
	case v1alpha1.RolloutRolledBack:
		return fmt.Sprintf("revision %d halted: %s; the %d clusters it changed run the revisions they ran before%s; "+
			"change the profile to roll out a fixed revision", st.Revision, st.HaltReason, c.RolledBack, skipped)
	}
	windows := ""
	if c.WaitingForWindow > 0 {
		windows = fmt.Sprintf("; %d clusters wait for their maintenance window", c.WaitingForWindow)
	}
	return fmt.Sprintf("revision %d: %s: %d done, %d changing, %d failed%s%s", st.Revision, stepText(), c.Done, c.InProgress, c.Failed, windows, skipped)
}

func clusterName(name string) string {
	if name == "" {
		return v1alpha1.HubClusterName
	}
	return name
}
