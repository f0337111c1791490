package plan

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
)

// revisions is the driver's test port with what a package's revisions
// ask beyond it; calls lists them in order.
type revisions struct {
	port
	installed  []*unstructured.Unstructured
	found      bool
	intentErr  error
	namespace  *news.Stop // PrepareNamespace's answer
	calls      []string
	events     []string
	intentRev  *v1alpha1.Revision
	everything int
}

func (w *revisions) Installed() ([]*unstructured.Unstructured, []byte, bool, error) {
	w.calls = append(w.calls, "installed")
	return w.installed, nil, w.found, nil
}
func (w *revisions) Key(o *unstructured.Unstructured) string { return o.GetKind() + "/" + o.GetName() }
func (w *revisions) Refs(objs []*unstructured.Unstructured) []v1alpha1.ObjectReference {
	var refs []v1alpha1.ObjectReference
	for _, o := range objs {
		refs = append(refs, v1alpha1.ObjectReference{Kind: o.GetKind(), Name: o.GetName()})
	}
	return refs
}
func (w *revisions) Next() v1alpha1.Revision { return v1alpha1.Revision{Number: 3, Version: "2.0.0"} }
func (w *revisions) WriteIntent(rev *v1alpha1.Revision, _ []*unstructured.Unstructured, _ []byte, everything []*unstructured.Unstructured) error {
	w.calls = append(w.calls, "intent")
	w.intentRev, w.everything = rev, len(everything)
	return w.intentErr
}
func (w *revisions) PrepareNamespace() *news.Stop {
	w.calls = append(w.calls, "namespace")
	return w.namespace
}
func (w *revisions) Completed(rev v1alpha1.Revision) error {
	w.calls = append(w.calls, "completed")
	return nil
}
func (w *revisions) Stopped(rev v1alpha1.Revision) error {
	w.calls = append(w.calls, "stopped")
	return nil
}
func (w *revisions) Observe(st v1alpha1.PlanStatus) {
	w.calls = append(w.calls, "observe "+string(st.State))
}
func (w *revisions) Event(eventType, reason, message string) {
	w.events = append(w.events, eventType+" "+reason+": "+message)
}

func applying(name string, objs ...string) Plan {
	var us []*unstructured.Unstructured
	for _, o := range objs {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetName(o)
		us = append(us, u)
	}
	return Plan{Name: name, Strategy: Serial, Phases: []Phase{{Name: "main", Strategy: Serial, Steps: []Step{
		{Name: "a", Tasks: []Task{{Name: "a", Kind: TaskApply, Objects: us}}}, {Name: "b"},
	}}}}
}

func TestRevise(t *testing.T) {
	deploy := applying("deploy", "cm")
	pending := &v1alpha1.Revision{Number: 3, Version: "2.0.0", Plans: []string{"deploy"}, Trigger: "install"}
	installed := v1alpha1.Revision{Number: 2, Version: "1.0.0", Plans: []string{"deploy"}}
	running := v1alpha1.PlanStatus{Name: "deploy", Revision: 3, Trigger: "install", State: v1alpha1.PlanInProgress,
		Phases: []v1alpha1.PhaseStatus{{Name: "main", State: v1alpha1.PlanInProgress, Steps: []v1alpha1.StepStatus{{Name: "a", State: v1alpha1.PlanComplete}, {Name: "b", State: v1alpha1.PlanInProgress}}}}}
	for _, tc := range []struct {
		name      string
		plans     []Plan
		resuming  bool
		request   *v1alpha1.PlanRequest
		abandon   *v1alpha1.PlanRequest
		pending   *v1alpha1.Revision
		history   []v1alpha1.Revision
		statuses  []v1alpha1.PlanStatus
		installed metav1.Condition
		results   map[string]StepResult
		world     revisions
		want      RevisionOutcome
		stop      string // the stop's reason ("" none)
		calls     string
		events    string
		pendingNo int64 // status.pending's number afterwards (0: none)
		err       bool
	}{
		// New inputs: the intent is recorded first, the plans start and
		// run; all complete, the revision is recorded.
		{name: "a new revision runs to the end", plans: []Plan{deploy}, request: &v1alpha1.PlanRequest{Name: "deploy", ID: "r1"},
			calls: "installed intent namespace completed", pendingNo: 3},
		// The intent cannot be written: nothing starts.
		{name: "the intent is refused", plans: []Plan{deploy}, world: revisions{intentErr: errors.New("too large")},
			calls: "installed intent", err: true},
		// Resuming the pending revision: no new intent; a waiting step
		// holds it, polling once, the Installed condition saying why.
		{name: "resumed, a step waits", plans: []Plan{deploy}, resuming: true, pending: pending, statuses: []v1alpha1.PlanStatus{running},
			results: map[string]StepResult{"b": Waiting("b", "not ready")},
			want:    RevisionOutcome{Installed: true, Polls: 1}, stop: v1alpha1.ReasonPlanRunning, calls: "namespace", pendingNo: 3},
		// The target namespace cannot be applied: a wait polls 30 times.
		{name: "the namespace waits", plans: []Plan{deploy}, resuming: true, pending: pending, statuses: []v1alpha1.PlanStatus{running},
			world: revisions{namespace: &news.Stop{Kind: news.Wait, Reason: v1alpha1.ReasonPermissionDenied}},
			want:  RevisionOutcome{Installed: true, Polls: 30}, stop: v1alpha1.ReasonPermissionDenied, calls: "namespace", pendingNo: 3},
		// A fatal step stops the revision: recorded as stopped, terminal.
		{name: "a plan fails", plans: []Plan{deploy}, resuming: true, pending: pending, statuses: []v1alpha1.PlanStatus{running},
			results: map[string]StepResult{"b": Fatal("b", errors.New("boom"))},
			want:    RevisionOutcome{Installed: true}, stop: v1alpha1.ReasonPlanFailed, calls: "namespace stopped", pendingNo: 3},
		// An abandon request stops the running plan where it is; what it
		// may have applied is left behind.
		{name: "abandoned by request", plans: []Plan{deploy}, resuming: true, pending: pending, statuses: []v1alpha1.PlanStatus{running},
			abandon: &v1alpha1.PlanRequest{Name: "deploy", ID: "a1"},
			want:    RevisionOutcome{Installed: true}, stop: v1alpha1.ReasonPlanAbandoned, calls: "observe ABANDONED stopped",
			events: "Warning PlanAbandoned: plan deploy abandoned by request a1", pendingNo: 3},
		// An abandon request for a plan that does not run: told, and the
		// reconcile goes on.
		{name: "nothing to abandon", history: []v1alpha1.Revision{installed}, world: revisions{found: true},
			abandon: &v1alpha1.PlanRequest{Name: "backup", ID: "a2"},
			want:    RevisionOutcome{Settled: true, CheckDrift: true}, calls: "installed",
			events: "Normal PlanAbandoned: request a2: plan backup is not running; nothing to abandon"},
		// Settled: drift is checked against what the plans left.
		{name: "settled", history: []v1alpha1.Revision{installed}, world: revisions{found: true},
			want: RevisionOutcome{Settled: true, CheckDrift: true}, calls: "installed"},
		// Settled with a plan of the last revision unfinished: stopped as
		// its Installed condition says, nothing read.
		{name: "settled, unfinished", history: []v1alpha1.Revision{installed},
			statuses:  []v1alpha1.PlanStatus{{Name: "deploy", Revision: 2, State: v1alpha1.PlanFatalError}},
			installed: metav1.Condition{Type: v1alpha1.ConditionInstalled, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPlanFailed, Message: "plan deploy failed"},
			want:      RevisionOutcome{Settled: true}, stop: v1alpha1.ReasonPlanFailed},
		// Never installed and nothing to run: nothing to do.
		{name: "nothing", want: RevisionOutcome{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{}
			inst.Spec.Plans = &v1alpha1.PlanRequests{Abandon: tc.abandon}
			inst.Status.Pending, inst.Status.History, inst.Status.Plans = tc.pending.DeepCopy(), tc.history, slices.Clone(tc.statuses)
			if tc.installed.Type != "" {
				meta.SetStatusCondition(&inst.Status.Conditions, tc.installed)
			}
			w := tc.world
			w.results = tc.results
			out, err := Revise(RevisionInput{Inst: inst, Plans: tc.plans, Resuming: tc.resuming, Trigger: "install", Request: tc.request}, &w)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want one: %v", err, tc.err)
			}
			if out.Installed != tc.want.Installed || out.Polls != tc.want.Polls || out.Settled != tc.want.Settled || out.CheckDrift != tc.want.CheckDrift {
				t.Errorf("outcome %+v, want %+v", out, tc.want)
			}
			if reason := ""; out.Stop != nil || tc.stop != "" {
				if out.Stop != nil {
					reason = out.Stop.Reason
				}
				if reason != tc.stop {
					t.Errorf("stop %+v, want reason %q", out.Stop, tc.stop)
				}
			}
			if calls := strings.Join(w.calls, " "); calls != tc.calls {
				t.Errorf("calls %q, want %q", calls, tc.calls)
			}
			if events := strings.Join(w.events, "\n"); events != tc.events {
				t.Errorf("events %q, want %q", events, tc.events)
			}
			if n := inst.Status.Pending; (n == nil) != (tc.pendingNo == 0) || n != nil && n.Number != tc.pendingNo {
				t.Errorf("status.pending %+v, want revision %d", n, tc.pendingNo)
			}
			if tc.request != nil && !tc.err && (inst.Status.PlanRequests == nil || inst.Status.PlanRequests.Run == nil || *inst.Status.PlanRequests.Run != *tc.request) {
				t.Errorf("run request not marked carried out: %+v", inst.Status.PlanRequests)
			}
			if w.intentRev != nil && (w.intentRev.Trigger != "install" || !slices.Equal(w.intentRev.Plans, []string{"deploy"}) || w.intentRev.ManifestDigest == "" || w.everything == 0) {
				t.Errorf("intent of %+v with %d objects, want the plans, the trigger, a manifest digest and the plans' objects", w.intentRev, w.everything)
			}
			if tc.stop == v1alpha1.ReasonPlanAbandoned {
				if st := StatusOf(inst.Status.Plans, "deploy"); st == nil || st.State != v1alpha1.PlanAbandoned || len(st.LeftBehind) != 1 {
					t.Errorf("status.plans: %+v, want deploy ABANDONED leaving cm behind", st)
				}
			}
		})
	}
}
