package plan

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// port answers each step by its name from results (done when absent) and
// counts what the driver asked of it.
type port struct {
	results  map[string]StepResult
	ran      []string
	saves    int
	saveErr  error
	started  []string
	finished []v1alpha1.PlanState
}

func (p *port) RunStep(step Step) StepResult {
	p.ran = append(p.ran, step.Name)
	if res, ok := p.results[step.Name]; ok {
		return res
	}
	return StepResult{Done: true}
}
func (p *port) Save() error                            { p.saves++; return p.saveErr }
func (p *port) Now() metav1.Time                       { return metav1.Unix(1, 0) }
func (p *port) Started(pl Plan, _ v1alpha1.PlanStatus) { p.started = append(p.started, pl.Name) }
func (p *port) Finished(st v1alpha1.PlanStatus)        { p.finished = append(p.finished, st.State) }
func serial(name string, steps ...string) Plan {
	var ss []Step
	for _, s := range steps {
		ss = append(ss, Step{Name: s})
	}
	return Plan{Name: name, Strategy: Serial, Phases: []Phase{{Name: "main", Strategy: Serial, Steps: ss}}}
}

func TestAdvance(t *testing.T) {
	rev := v1alpha1.Revision{Number: 2, Trigger: "install"}
	deploy, migrate := serial("deploy", "a", "b"), serial("migrate", "c")
	for _, tc := range []struct {
		name     string
		results  map[string]StepResult
		before   []v1alpha1.PlanStatus // statuses of an earlier reconcile
		want     Halt
		at       string   // the plan Advance halted in (none when Done)
		ran      []string // the steps run, in order
		finished []v1alpha1.PlanState
	}{
		// Every step done: both plans complete in one call, each told
		// when it starts and finishes.
		{name: "done", want: Done, ran: []string{"a", "b", "c"}, finished: []v1alpha1.PlanState{v1alpha1.PlanComplete, v1alpha1.PlanComplete}},
		// A waiting step halts the driver in its plan; the next plan does
		// not start.
		{name: "waits", results: map[string]StepResult{"b": Waiting("b", "not ready")}, want: Waits, at: "deploy", ran: []string{"a", "b"}},
		// A fatal step stops the revision's plans.
		{name: "fatal", results: map[string]StepResult{"a": Fatal("a", errors.New("boom"))}, want: Stopped, at: "deploy", ran: []string{"a"},
			finished: []v1alpha1.PlanState{v1alpha1.PlanFatalError}},
		// Resuming: a plan already complete in this revision runs nothing
		// again; the driver goes on with the next.
		{name: "resume", before: []v1alpha1.PlanStatus{{Name: "deploy", Revision: 2, State: v1alpha1.PlanComplete}},
			want: Done, ran: []string{"c"}, finished: []v1alpha1.PlanState{v1alpha1.PlanComplete}},
		// A status of an older revision does not count: the plan starts
		// again.
		{name: "older revision", before: []v1alpha1.PlanStatus{{Name: "deploy", Revision: 1, State: v1alpha1.PlanComplete}},
			want: Done, ran: []string{"a", "b", "c"}, finished: []v1alpha1.PlanState{v1alpha1.PlanComplete, v1alpha1.PlanComplete}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &port{results: tc.results}
			statuses := slices.Clone(tc.before)
			halt, at, st, err := Advance([]Plan{deploy, migrate}, rev, &statuses, p)
			if err != nil {
				t.Fatal(err)
			}
			if halt != tc.want || at.Name != tc.at || !slices.Equal(p.ran, tc.ran) || !slices.Equal(p.finished, tc.finished) {
				t.Fatalf("Advance = %v in %q (ran %v, finished %v), want %v in %q (ran %v, finished %v)",
					halt, at.Name, p.ran, p.finished, tc.want, tc.at, tc.ran, tc.finished)
			}
			if halt != Done && StatusOf(statuses, at.Name).State != st.State {
				t.Fatalf("statuses hold %s for %s, Advance returned %s", StatusOf(statuses, at.Name).State, at.Name, st.State)
			}
		})
	}
}

// A save that fails stops the driver with the error, after the pass it
// could not save.
func TestAdvanceSaveError(t *testing.T) {
	p := &port{saveErr: errors.New("conflict")}
	var statuses []v1alpha1.PlanStatus
	if _, _, _, err := Advance([]Plan{serial("deploy", "a", "b")}, v1alpha1.Revision{Number: 1}, &statuses, p); err == nil || !slices.Equal(p.ran, []string{"a"}) {
		t.Fatalf("Advance: err %v after %v, want the save's error after step a", err, p.ran)
	}
}

func TestBeginAndResumes(t *testing.T) {
	now := metav1.Unix(1, 0)
	deploy := serial("deploy", "a")
	statuses := []v1alpha1.PlanStatus{{Name: "old", Revision: 1, State: v1alpha1.PlanInProgress}}
	old := &v1alpha1.Revision{Number: 1, Plans: []string{"old"}}
	Begin(&statuses, old, v1alpha1.Revision{Number: 2, Trigger: "update"}, []Plan{deploy}, now)
	if st := StatusOf(statuses, "old"); st.State != v1alpha1.PlanAbandoned {
		t.Fatalf("the superseded revision's running plan is %s, want ABANDONED", st.State)
	}
	if st := StatusOf(statuses, "deploy"); st.State != v1alpha1.PlanPending || st.Revision != 2 {
		t.Fatalf("the new plan is %s of revision %d, want PENDING of 2", st.State, st.Revision)
	}
	pending := &v1alpha1.Revision{Version: "1.0.0", ArtifactDigest: "a", ValuesDigest: "v", Plans: []string{"deploy"}}
	if !Resumes(pending, "1.0.0", "a", "v", []Plan{deploy}) || Resumes(pending, "1.0.0", "a", "w", []Plan{deploy}) || Resumes(nil, "1.0.0", "a", "v", []Plan{deploy}) {
		t.Fatal("Resumes: only the same version, artifact, values and plans resume the pending revision")
	}
	if Unfinished([]v1alpha1.PlanStatus{{Name: "deploy", Revision: 2, State: v1alpha1.PlanComplete}}, v1alpha1.Revision{Number: 2, Plans: []string{"deploy"}}) != nil ||
		Unfinished([]v1alpha1.PlanStatus{{Name: "deploy", Revision: 2, State: v1alpha1.PlanFatalError}}, v1alpha1.Revision{Number: 2, Plans: []string{"deploy"}}) == nil {
		t.Fatal("Unfinished: a complete plan is finished, a fatal one is not")
	}
}

func TestCleanupNext(t *testing.T) {
	now := metav1.Unix(1, 0)
	cleanup := serial("cleanup", "a")
	fatal := v1alpha1.PlanStatus{Name: "cleanup", Revision: 3, Trigger: CleanupTrigger, State: v1alpha1.PlanFatalError}
	running := v1alpha1.PlanStatus{Name: "cleanup", Revision: 3, Trigger: CleanupTrigger, State: v1alpha1.PlanInProgress}
	run, abandon := &v1alpha1.PlanRequest{Name: "cleanup", ID: "r1"}, &v1alpha1.PlanRequest{Name: "cleanup", ID: "a1"}
	other := &v1alpha1.PlanRequest{Name: "deploy", ID: "x"}

	// No request: it runs from where it is.
	if act, st, ran, ab := CleanupNext(cleanup, running, nil, nil, now); act != CleanupRun || st.State != v1alpha1.PlanInProgress || ran != nil || ab != nil {
		t.Fatalf("no request: %v %s %v %v", act, st.State, ran, ab)
	}
	// A run request restarts a fatal cleanup.
	if act, st, ran, _ := CleanupNext(cleanup, fatal, run, nil, now); act != CleanupRun || st.State != v1alpha1.PlanPending || ran != run {
		t.Fatalf("run request on a fatal plan: %v %s %v", act, st.State, ran)
	}
	// A run request of another plan does nothing.
	if _, st, ran, _ := CleanupNext(cleanup, fatal, other, nil, now); st.State != v1alpha1.PlanFatalError || ran != nil {
		t.Fatalf("run request of another plan: %s %v", st.State, ran)
	}
	// An abandon request stops a running cleanup; uninstalling goes on.
	if act, st, _, ab := CleanupNext(cleanup, running, nil, abandon, now); act != CleanupAbandon || st.State != v1alpha1.PlanAbandoned || ab != abandon {
		t.Fatalf("abandon request: %v %s %v", act, st.State, ab)
	}
	// A fatal cleanup is not running: an abandon request alone leaves it.
	if act, _, _, ab := CleanupNext(cleanup, fatal, nil, abandon, now); act != CleanupRun || ab != nil {
		t.Fatalf("abandon request on a fatal plan: %v %v", act, ab)
	}
}

// A package record round-trips; a chart's record has none.
func TestPackageRecord(t *testing.T) {
	cleanup := serial("cleanup", "a")
	data, err := json.Marshal(PackageRecord{Params: map[string]any{"replicas": 2.0}, Cleanup: &cleanup, AppliedBy: map[string]string{"v1/ConfigMap/apps/x": "deploy"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := DecodePackageRecord(data)
	if rec.Cleanup == nil || rec.Cleanup.Name != "cleanup" || rec.Params["replicas"] != 2.0 || rec.AppliedBy["v1/ConfigMap/apps/x"] != "deploy" {
		t.Fatalf("DecodePackageRecord = %+v", rec)
	}
	if rec := DecodePackageRecord(nil); rec.Cleanup != nil || rec.Params != nil {
		t.Fatalf("a chart's record: %+v", rec)
	}
}

// What an installation says while its plan waits or after it stopped.
func TestHaltConditions(t *testing.T) {
	p := serial("deploy", "a")
	if r, m := WaitingCondition(p, v1alpha1.PlanStatus{State: v1alpha1.PlanInProgress, Message: "2 of 3 ready"}); r != v1alpha1.ReasonPlanRunning || m != "plan deploy: 2 of 3 ready" {
		t.Errorf("waiting: %s %q", r, m)
	}
	if _, m := WaitingCondition(p, v1alpha1.PlanStatus{State: v1alpha1.PlanError, Message: "x"}); !strings.HasSuffix(m, "abandon the plan with annexctl plan abandon") {
		t.Errorf("an erring step says what to do: %q", m)
	}
	if r, m := StoppedCondition(v1alpha1.PlanStatus{Name: "deploy", State: v1alpha1.PlanFatalError, Message: "boom"}); r != v1alpha1.ReasonPlanFailed || !strings.Contains(m, "annexctl plan run deploy") {
		t.Errorf("fatal: %s %q", r, m)
	}
	if r, m := StoppedCondition(v1alpha1.PlanStatus{Name: "deploy", State: v1alpha1.PlanAbandoned, LeftBehind: make([]v1alpha1.ObjectReference, 2)}); r != v1alpha1.ReasonPlanAbandoned || !strings.Contains(m, "left behind 2 objects") {
		t.Errorf("abandoned: %s %q", r, m)
	}
}

func TestRunDummy(t *testing.T) {
	for _, tc := range []struct {
		d    Dummy
		want StepResult
	}{
		{Dummy{Done: true}, StepResult{Done: true}},
		{Dummy{}, StepResult{Message: "dummy task: not done (done: false)"}},
		{Dummy{WantErr: true}, StepResult{Failed: true, Message: "dummy task: error (wantErr: true)"}},
		{Dummy{WantErr: true, Fatal: true}, StepResult{Fatal: true, Message: "dummy task: fatal error (fatal: true)"}},
	} {
		got := RunDummy(Task{Name: "t", Kind: TaskDummy, Dummy: &tc.d})
		if got.Done != tc.want.Done || got.Failed != tc.want.Failed || got.Fatal != tc.want.Fatal || !strings.Contains(got.Message, tc.want.Message) {
			t.Errorf("RunDummy(%+v) = %+v, want %+v", tc.d, got, tc.want)
		}
	}
}

func TestDriftable(t *testing.T) {
	obj := func(apiVersion, kind string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion(apiVersion)
		o.SetKind(kind)
		return o
	}
	got := Driftable([]*unstructured.Unstructured{obj("batch/v1", "Job"), obj("v1", "Pod"), obj("apps/v1", "Deployment"), obj("example.com/v1", "Job")})
	if len(got) != 2 || got[0].GetKind() != "Deployment" || got[1].GetAPIVersion() != "example.com/v1" {
		t.Fatalf("Driftable kept %d objects", len(got))
	}
}
