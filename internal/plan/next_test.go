package plan

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// twoByTwo is a plan of two phases of two steps each.
func twoByTwo(planStrategy, phaseStrategy Strategy) Plan {
	steps := func(a, b string) []Step { return []Step{{Name: a}, {Name: b}} }
	return Plan{Name: "deploy", Strategy: planStrategy, Phases: []Phase{
		{Name: "one", Strategy: phaseStrategy, Steps: steps("a", "b")},
		{Name: "two", Strategy: phaseStrategy, Steps: steps("c", "d")},
	}}
}

func TestNextOffersStepsByStrategy(t *testing.T) {
	now := metav1.Now()
	cases := []struct {
		name string
		plan Plan
		done []StepRef // steps already COMPLETE
		want []StepRef
	}{
		// Serial everywhere: one step at a time, in order.
		{"serial fresh", twoByTwo(Serial, Serial), nil, []StepRef{{0, 0}}},
		// A serial phase moves to its next step once the first is done.
		{"serial second step", twoByTwo(Serial, Serial), []StepRef{{0, 0}}, []StepRef{{0, 1}}},
		// A serial plan starts the next phase only when the first is COMPLETE.
		{"serial next phase", twoByTwo(Serial, Serial), []StepRef{{0, 0}, {0, 1}}, []StepRef{{1, 0}}},
		// Parallel steps of a serial plan: the whole first phase at once.
		{"parallel steps", twoByTwo(Serial, Parallel), nil, []StepRef{{0, 0}, {0, 1}}},
		// A parallel plan of serial phases: the first step of every phase.
		{"parallel phases", twoByTwo(Parallel, Serial), nil, []StepRef{{0, 0}, {1, 0}}},
		// KUDO's rule: an empty strategy is parallel.
		{"empty strategy", twoByTwo("", ""), []StepRef{{1, 1}}, []StepRef{{0, 0}, {0, 1}, {1, 0}}},
		// Everything done: nothing to run.
		{"all done", twoByTwo(Serial, Serial), []StepRef{{0, 0}, {0, 1}, {1, 0}, {1, 1}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := Start(c.plan, "install", 1, now)
			results := map[StepRef]StepResult{}
			for _, ref := range c.done {
				results[ref] = StepResult{Done: true}
			}
			st = Record(c.plan, st, results, now)
			got := Next(c.plan, st)
			if !reflect.DeepEqual(got.Run, c.want) {
				t.Fatalf("Next offered %v, want %v", got.Run, c.want)
			}
			if got.Finished != (c.want == nil) {
				t.Fatalf("Finished = %v with %v left", got.Finished, c.want)
			}
		})
	}
}

func TestRecordStates(t *testing.T) {
	now := metav1.Now()
	p := twoByTwo(Serial, Serial)
	st := Start(p, "install", 1, now)
	if st.State != v1alpha1.PlanPending {
		t.Fatalf("a started plan is %s, want PENDING", st.State)
	}

	// A step that waits keeps the plan IN_PROGRESS, with its message.
	st = Record(p, st, map[StepRef]StepResult{{0, 0}: Waiting("app", "Deployment web: 0 of 2 replicas available")}, now)
	if st.State != v1alpha1.PlanInProgress || st.Phases[0].State != v1alpha1.PlanInProgress {
		t.Fatalf("waiting: plan %s phase %s, want IN_PROGRESS", st.State, st.Phases[0].State)
	}
	if st.Message != "one/a: task app: Deployment web: 0 of 2 replicas available" {
		t.Fatalf("message %q", st.Message)
	}

	// A transient failure is ERROR at the step and the plan, and clears.
	st = Record(p, st, map[StepRef]StepResult{{0, 0}: Failed("app", errString("boom"))}, now)
	if st.State != v1alpha1.PlanError || st.Phases[0].Steps[0].State != v1alpha1.PlanError {
		t.Fatalf("failed: plan %s step %s, want ERROR", st.State, st.Phases[0].Steps[0].State)
	}
	st = Record(p, st, map[StepRef]StepResult{{0, 0}: {Done: true}}, now)
	if st.State != v1alpha1.PlanInProgress || st.Message != "" {
		t.Fatalf("after the retry passed: plan %s %q, want IN_PROGRESS and no message", st.State, st.Message)
	}

	// A fatal step stops the plan; Next offers nothing more.
	st = Record(p, st, map[StepRef]StepResult{{0, 1}: Fatal("migrate", errString("Job migrate failed"))}, now)
	if st.State != v1alpha1.PlanFatalError || st.Phases[0].State != v1alpha1.PlanFatalError || st.FinishedAt == nil {
		t.Fatalf("fatal: plan %s phase %s", st.State, st.Phases[0].State)
	}
	if d := Next(p, st); !d.Finished || len(d.Run) != 0 {
		t.Fatalf("a FATAL_ERROR plan still offers %v", d.Run)
	}
}

func TestCompleteAndAbandon(t *testing.T) {
	now := metav1.Now()
	p := twoByTwo(Parallel, Parallel)
	st := Start(p, "install", 1, now)
	all := map[StepRef]StepResult{{0, 0}: {Done: true}, {0, 1}: {Done: true}, {1, 0}: {Done: true}}
	st = Record(p, st, all, now)
	if st.State != v1alpha1.PlanInProgress {
		t.Fatalf("three of four steps done: %s", st.State)
	}
	if got := Started(p, st); len(got) != 3 {
		t.Fatalf("Started = %v, want the three done steps", got)
	}
	abandoned := Abandon(st, "abandoned by request 1", now)
	if abandoned.State != v1alpha1.PlanAbandoned || abandoned.Phases[1].Steps[1].State != v1alpha1.PlanAbandoned ||
		abandoned.Phases[0].Steps[0].State != v1alpha1.PlanComplete {
		t.Fatalf("abandon: %+v", abandoned)
	}
	if d := Next(p, abandoned); !d.Finished {
		t.Fatal("an abandoned plan still runs")
	}

	st = Record(p, st, map[StepRef]StepResult{{1, 1}: {Done: true}}, now)
	if st.State != v1alpha1.PlanComplete || st.FinishedAt == nil {
		t.Fatalf("every step done: %s", st.State)
	}
}

// A plan with no phases (allowed in packages) is complete at once.
func TestEmptyPlan(t *testing.T) {
	now := metav1.Now()
	p := Plan{Name: "noop"}
	st := Record(p, Start(p, "request", 1, now), nil, now)
	if st.State != v1alpha1.PlanComplete {
		t.Fatalf("empty plan: %s", st.State)
	}
}

// A status recorded for another shape of the plan (the package changed
// under it) restarts the plan instead of indexing out of range.
func TestShapeChangeRestarts(t *testing.T) {
	now := metav1.Now()
	old := twoByTwo(Serial, Serial)
	st := Record(old, Start(old, "install", 1, now), map[StepRef]StepResult{{0, 0}: {Done: true}}, now)
	p := Plan{Name: "deploy", Strategy: Serial, Phases: []Phase{{Name: "only", Strategy: Serial, Steps: []Step{{Name: "x"}}}}}
	if d := Next(p, st); !reflect.DeepEqual(d.Run, []StepRef{{0, 0}}) {
		t.Fatalf("Next on a changed plan offered %v", d.Run)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// Drive runs steps until one waits, saving the status after each pass
// that leaves the plan running, and finishes a plan whose steps never wait
// in one call.
func TestDrive(t *testing.T) {
	now := func() metav1.Time { return metav1.Now() }
	p := twoByTwo(Serial, Serial)
	var ran []string
	var saves int
	waitAt := "c"
	run := func(_ StepRef, s Step) StepResult {
		ran = append(ran, s.Name)
		if s.Name == waitAt {
			return Waiting("x", "not yet")
		}
		return StepResult{Done: true}
	}
	saved := func(v1alpha1.PlanStatus) error { saves++; return nil }

	st, waiting, err := Drive(p, Start(p, "install", 1, now()), run, now, saved)
	if err != nil || !waiting || st.State != v1alpha1.PlanInProgress {
		t.Fatalf("first drive: waiting %v, %s, %v", waiting, st.State, err)
	}
	if got := strings.Join(ran, ","); got != "a,b,c" || saves != 2 {
		t.Fatalf("ran %s with %d saves, want a,b,c with 2", got, saves)
	}

	// The step passes: Drive resumes at it, not at the start.
	ran, waitAt = nil, ""
	st, waiting, err = Drive(p, st, run, now, saved)
	if err != nil || waiting || st.State != v1alpha1.PlanComplete {
		t.Fatalf("second drive: waiting %v, %s, %v", waiting, st.State, err)
	}
	if got := strings.Join(ran, ","); got != "c,d" {
		t.Fatalf("resumed with %s, want c,d", got)
	}
}
