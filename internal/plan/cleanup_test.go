package plan

import (
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// cleanupWorld is the driver's test port with what a cleanup asks
// beyond it.
type cleanupWorld struct {
	port
	enlisted []string
	holds    bool // Prepare holds the deletion
	prepared int
}

func (w *cleanupWorld) Enlist(p Plan)          { w.enlisted = append(w.enlisted, p.Name) }
func (w *cleanupWorld) Prepare() (bool, error) { w.prepared++; return !w.holds, nil }

func TestRunCleanup(t *testing.T) {
	cleanup := serial("cleanup", "a", "b")
	started := v1alpha1.PlanStatus{Name: "cleanup", Revision: 4, Trigger: CleanupTrigger, State: v1alpha1.PlanInProgress}
	fatal := v1alpha1.PlanStatus{Name: "cleanup", Revision: 4, Trigger: CleanupTrigger, State: v1alpha1.PlanFatalError, Message: "a: boom"}
	deployed := v1alpha1.PlanStatus{Name: "cleanup", Revision: 4, Trigger: "install", State: v1alpha1.PlanComplete}
	for _, tc := range []struct {
		name     string
		before   []v1alpha1.PlanStatus
		run      *v1alpha1.PlanRequest
		abandon  *v1alpha1.PlanRequest
		results  map[string]StepResult
		holds    bool
		want     CleanupOutcome
		enlisted bool     // its objects joined the inventory in this pass
		ran      []string // the steps run
		state    v1alpha1.PlanState
		marked   bool // a request was marked carried out
	}{
		// The first pass starts it for the deletion (a status of another
		// trigger does not count), enlists what it applies, and runs it.
		{name: "first pass", before: []v1alpha1.PlanStatus{deployed}, want: CleanupOutcome{Done: true}, enlisted: true,
			ran: []string{"a", "b"}, state: v1alpha1.PlanComplete},
		// A step that waits holds the deletion, polling.
		{name: "waits", results: map[string]StepResult{"b": Waiting("b", "job running")}, enlisted: true, ran: []string{"a", "b"},
			want: CleanupOutcome{Reason: v1alpha1.ReasonUninstalling, Message: "plan cleanup: main/b: task b: job running", Polls: 1}, state: v1alpha1.PlanInProgress},
		// A FATAL_ERROR holds it until a person acts.
		{name: "fatal", before: []v1alpha1.PlanStatus{started}, results: map[string]StepResult{"a": Fatal("a", errors.New("boom"))}, ran: []string{"a"},
			want: CleanupOutcome{Reason: v1alpha1.ReasonCleanupFailed, Polls: 30}, state: v1alpha1.PlanFatalError},
		// A fatal plan stays so without a request: nothing runs.
		{name: "stays fatal", before: []v1alpha1.PlanStatus{fatal},
			want: CleanupOutcome{Reason: v1alpha1.ReasonCleanupFailed, Polls: 30}, state: v1alpha1.PlanFatalError},
		// A run request restarts it.
		{name: "run request", before: []v1alpha1.PlanStatus{fatal}, run: &v1alpha1.PlanRequest{Name: "cleanup", ID: "r1"},
			want: CleanupOutcome{Done: true}, ran: []string{"a", "b"}, state: v1alpha1.PlanComplete, marked: true},
		// An abandon request stops a running one; the uninstall goes on.
		{name: "abandon request", before: []v1alpha1.PlanStatus{started}, abandon: &v1alpha1.PlanRequest{Name: "cleanup", ID: "a1"},
			want: CleanupOutcome{Done: true, Abandoned: &v1alpha1.PlanRequest{Name: "cleanup", ID: "a1"}}, state: v1alpha1.PlanAbandoned, marked: true},
		// The target not ready holds the deletion before any step.
		{name: "prepare holds", before: []v1alpha1.PlanStatus{started}, holds: true, state: v1alpha1.PlanInProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{}
			inst.Status.History = []v1alpha1.Revision{{Number: 4}}
			inst.Status.Plans = slices.Clone(tc.before)
			if tc.run != nil || tc.abandon != nil {
				inst.Spec.Plans = &v1alpha1.PlanRequests{Run: tc.run, Abandon: tc.abandon}
			}
			w := &cleanupWorld{port: port{results: tc.results}, holds: tc.holds}
			out, err := RunCleanup(inst, cleanup, w)
			if err != nil {
				t.Fatal(err)
			}
			if out.Done != tc.want.Done || out.Reason != tc.want.Reason || out.Polls != tc.want.Polls ||
				tc.want.Message != "" && out.Message != tc.want.Message || (out.Abandoned == nil) != (tc.want.Abandoned == nil) {
				t.Errorf("outcome = %+v, want %+v", out, tc.want)
			}
			if got := len(w.enlisted) > 0; got != tc.enlisted {
				t.Errorf("enlisted %v, want %v", w.enlisted, tc.enlisted)
			}
			if !slices.Equal(w.ran, tc.ran) {
				t.Errorf("ran %v, want %v", w.ran, tc.ran)
			}
			st := StatusOf(inst.Status.Plans, "cleanup")
			if st == nil || st.State != tc.state || st.Trigger != CleanupTrigger || st.Revision != 4 {
				t.Errorf("status %+v, want %s, triggered by the deletion, of revision 4", st, tc.state)
			}
			if got := inst.Status.PlanRequests != nil; got != tc.marked {
				t.Errorf("requests marked: %v, want %v", inst.Status.PlanRequests, tc.marked)
			}
		})
	}
}

func TestAbandonByRequest(t *testing.T) {
	now := metav1.Unix(1, 0)
	req := &v1alpha1.PlanRequest{Name: "deploy", ID: "a1"}
	pending := &v1alpha1.Revision{Number: 2, Plans: []string{"deploy"}}
	for _, tc := range []struct {
		name    string
		state   v1alpha1.PlanState
		pending *v1alpha1.Revision
		want    bool // the plan is abandoned
	}{
		// A plan that runs in the pending revision stops where it is.
		{"running", v1alpha1.PlanInProgress, pending, true},
		{"erring", v1alpha1.PlanError, pending, true},
		// One that finished, or no revision pending: nothing to abandon.
		{"complete", v1alpha1.PlanComplete, pending, false},
		{"nothing pending", v1alpha1.PlanInProgress, nil, false},
	} {
		inst := &v1alpha1.ExtensionInstallation{}
		inst.Status.Pending = tc.pending
		inst.Status.Plans = []v1alpha1.PlanStatus{{Name: "deploy", Revision: 2, State: tc.state}}
		got := AbandonByRequest(inst, req, now)
		if (got != nil) != tc.want {
			t.Errorf("%s: abandoned %+v, want %v", tc.name, got, tc.want)
		}
		if st := StatusOf(inst.Status.Plans, "deploy"); tc.want && (st.State != v1alpha1.PlanAbandoned || st.Message != "abandoned by request a1") {
			t.Errorf("%s: status %+v", tc.name, st)
		}
		// The request is carried out either way.
		if r := inst.Status.PlanRequests; r == nil || r.Abandon == nil || *r.Abandon != *req {
			t.Errorf("%s: request not marked: %+v", tc.name, r)
		}
	}
}

func TestFinishedMessage(t *testing.T) {
	if warning, msg := FinishedMessage(v1alpha1.PlanStatus{Name: "deploy", State: v1alpha1.PlanComplete}); warning || msg != "plan deploy finished: COMPLETE" {
		t.Errorf("complete: %v %q", warning, msg)
	}
	if warning, msg := FinishedMessage(v1alpha1.PlanStatus{Name: "deploy", State: v1alpha1.PlanFatalError, Message: "a: boom"}); !warning || msg != "plan deploy finished: FATAL_ERROR: a: boom" {
		t.Errorf("fatal: %v %q", warning, msg)
	}
}
