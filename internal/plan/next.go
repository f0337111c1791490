package plan

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// StepRef names one step of a plan by position.
type StepRef struct{ Phase, Step int }

// Decision is what Next says to do with a plan.
type Decision struct {
	// Run lists the steps to run now, in plan order. Empty when Finished.
	Run []StepRef
	// Finished is set when the plan is COMPLETE, FATAL_ERROR or ABANDONED:
	// nothing of it runs any more.
	Finished bool
}

// StepResult is what running one step's tasks found.
type StepResult struct {
	// Done: every task of the step is done (applied objects healthy,
	// deleted objects gone).
	Done bool
	// Fatal: the step failed for good (a render error, a failed Job, a
	// task that can never succeed); the plan stops in FATAL_ERROR.
	Fatal bool
	// Failed: a task failed and the step runs again on the next pass; the
	// step, and the plan, are in ERROR meanwhile.
	Failed bool
	// Message says what the step waits for or why it failed; "" when done.
	Message string
}

// Start returns the status of a plan about to run: PENDING, with every
// phase and step PENDING.
func Start(p Plan, trigger string, revision int64, now metav1.Time) v1alpha1.PlanStatus {
	st := v1alpha1.PlanStatus{
		Name:      p.Name,
		State:     v1alpha1.PlanPending,
		Trigger:   trigger,
		Revision:  revision,
		StartedAt: &now,
	}
	for _, ph := range p.Phases {
		ps := v1alpha1.PhaseStatus{Name: ph.Name, State: v1alpha1.PlanPending}
		for _, s := range ph.Steps {
			ps.Steps = append(ps.Steps, v1alpha1.StepStatus{Name: s.Name, State: v1alpha1.PlanPending})
		}
		st.Phases = append(st.Phases, ps)
	}
	return st
}

// NeverRun is the status of a plan that has not run.
func NeverRun(name string) v1alpha1.PlanStatus {
	return v1alpha1.PlanStatus{Name: name, State: v1alpha1.PlanNeverRun}
}

// Finished reports whether a plan in state s runs no more.
func Finished(s v1alpha1.PlanState) bool {
	return s == v1alpha1.PlanComplete || s == v1alpha1.PlanFatalError || s == v1alpha1.PlanAbandoned
}

// Running reports whether a plan in state s is scheduled or running (an
// ERROR is retried, so it is running too).
func Running(s v1alpha1.PlanState) bool {
	return s == v1alpha1.PlanPending || s == v1alpha1.PlanInProgress || s == v1alpha1.PlanError
}

// Next returns the steps of p to run now, given st, p's status as Start
// made it and Record advanced it. It walks phases in order and, within a
// phase, steps in order, skipping what is COMPLETE: a serial phase offers
// its first unfinished step only, a parallel one all of them; a serial
// plan stops at its first unfinished phase, a parallel plan offers every
// phase's steps. A status that does not match p's shape (the plan changed
// under a recorded status) restarts p from its first step.
func Next(p Plan, st v1alpha1.PlanStatus) Decision {
	if Finished(st.State) {
		return Decision{Finished: true}
	}
	if !sameShape(p, st) {
		st = Start(p, st.Trigger, st.Revision, metav1.Time{})
	}
	var run []StepRef
	for i, ph := range p.Phases {
		if st.Phases[i].State == v1alpha1.PlanComplete {
			continue
		}
		for j := range ph.Steps {
			if st.Phases[i].Steps[j].State == v1alpha1.PlanComplete {
				continue
			}
			run = append(run, StepRef{Phase: i, Step: j})
			if ph.Strategy == Serial {
				break
			}
		}
		if p.Strategy == Serial {
			break
		}
	}
	if len(run) == 0 {
		return Decision{Finished: true}
	}
	return Decision{Run: run}
}

// Record returns st advanced by the results of the steps Next offered: a
// done step is COMPLETE; a fatal one is FATAL_ERROR, and so are its phase
// and the plan; a failed one is ERROR (retried: the plan is in ERROR until
// the step passes); any other IN_PROGRESS. A phase whose steps are all
// COMPLETE is COMPLETE, and a plan whose phases are. now stamps FinishedAt
// when the plan finishes. st is not modified.
func Record(p Plan, st v1alpha1.PlanStatus, results map[StepRef]StepResult, now metav1.Time) v1alpha1.PlanStatus {
	if !sameShape(p, st) {
		st = Start(p, st.Trigger, st.Revision, now)
	}
	out := *st.DeepCopy()
	out.Message = ""
	fatal, failed := false, false
	for ref, res := range results {
		step := &out.Phases[ref.Phase].Steps[ref.Step]
		step.Message = res.Message
		switch {
		case res.Done:
			step.State, step.Message = v1alpha1.PlanComplete, ""
		case res.Fatal:
			step.State = v1alpha1.PlanFatalError
			out.Phases[ref.Phase].State = v1alpha1.PlanFatalError
			out.Phases[ref.Phase].Message = res.Message
			fatal = true
		case res.Failed:
			step.State = v1alpha1.PlanError
			failed = true
		default:
			step.State = v1alpha1.PlanInProgress
		}
	}
	complete := true
	for i := range out.Phases {
		ph := &out.Phases[i]
		if ph.State == v1alpha1.PlanFatalError {
			complete = false
			continue
		}
		all, started := true, false
		for _, s := range ph.Steps {
			all = all && s.State == v1alpha1.PlanComplete
			started = started || s.State != v1alpha1.PlanPending
		}
		switch {
		case all:
			ph.State, ph.Message = v1alpha1.PlanComplete, ""
		case started:
			ph.State = v1alpha1.PlanInProgress
		}
		complete = complete && all
	}
	out.Message = firstMessage(out)
	switch {
	case fatal:
		out.State = v1alpha1.PlanFatalError
		out.FinishedAt = &now
	case complete:
		out.State, out.Message = v1alpha1.PlanComplete, ""
		out.FinishedAt = &now
	case failed:
		out.State = v1alpha1.PlanError
	default:
		out.State = v1alpha1.PlanInProgress
	}
	return out
}

// Failed is the result of a step whose task failed transiently: the step
// is ERROR and runs again on the next pass.
func Failed(task string, err error) StepResult {
	return StepResult{Failed: true, Message: fmt.Sprintf("task %s: %v; retrying", task, err)}
}

// Fatal is the result of a step whose task can never succeed as it is.
func Fatal(task string, err error) StepResult {
	return StepResult{Fatal: true, Message: fmt.Sprintf("task %s: %v", task, err)}
}

// Waiting is the result of a step whose tasks wait (objects not healthy
// yet, objects not gone yet).
func Waiting(task, why string) StepResult {
	return StepResult{Message: fmt.Sprintf("task %s: %s", task, why)}
}

// Abandon returns st stopped where it is, ABANDONED, with why.
func Abandon(st v1alpha1.PlanStatus, why string, now metav1.Time) v1alpha1.PlanStatus {
	out := *st.DeepCopy()
	out.State, out.Message, out.FinishedAt = v1alpha1.PlanAbandoned, why, &now
	for i := range out.Phases {
		if out.Phases[i].State != v1alpha1.PlanComplete {
			out.Phases[i].State = v1alpha1.PlanAbandoned
		}
		for j := range out.Phases[i].Steps {
			if s := &out.Phases[i].Steps[j]; s.State != v1alpha1.PlanComplete {
				s.State = v1alpha1.PlanAbandoned
			}
		}
	}
	return out
}

// Started returns the steps of p that st says have started (COMPLETE, in
// progress, failed): what a plan stopped now leaves behind.
func Started(p Plan, st v1alpha1.PlanStatus) []StepRef {
	if !sameShape(p, st) {
		return nil
	}
	var out []StepRef
	for i, ph := range st.Phases {
		for j, s := range ph.Steps {
			if s.State != v1alpha1.PlanPending && s.State != v1alpha1.PlanNeverRun {
				out = append(out, StepRef{Phase: i, Step: j})
			}
		}
	}
	return out
}

// firstMessage is the message of the first step that has one, prefixed
// with its place in the plan.
func firstMessage(st v1alpha1.PlanStatus) string {
	for _, ph := range st.Phases {
		for _, s := range ph.Steps {
			if s.Message != "" {
				return fmt.Sprintf("%s/%s: %s", ph.Name, s.Name, s.Message)
			}
		}
	}
	return ""
}

// sameShape reports whether st has exactly p's phases and steps.
func sameShape(p Plan, st v1alpha1.PlanStatus) bool {
	if len(st.Phases) != len(p.Phases) {
		return false
	}
	for i, ph := range p.Phases {
		if st.Phases[i].Name != ph.Name || len(st.Phases[i].Steps) != len(ph.Steps) {
			return false
		}
		for j, s := range ph.Steps {
			if st.Phases[i].Steps[j].Name != s.Name {
				return false
			}
		}
	}
	return true
}

// Runner runs one step of a plan and says what came of it.
type Runner func(ref StepRef, step Step) StepResult

// Drive is the executor: it runs the steps of p that Next offers, pass
// after pass, recording each pass's results, until a step has to wait or
// fail (waiting is then true) or p finishes. After each pass that leaves
// p running, saved is called with the new status (nil: not saved), so that
// an executor stopped anywhere resumes at the step it was in; a save error
// ends Drive with it. Every engine's plans run through Drive: a chart's
// in one call (OnePass: its steps never wait), a
// package's across reconciles by the resumable driver (Advance,
// DriveOne, run.go).
func Drive(p Plan, st v1alpha1.PlanStatus, run Runner, now func() metav1.Time, saved func(v1alpha1.PlanStatus) error) (v1alpha1.PlanStatus, bool, error) {
	for {
		d := Next(p, st)
		if d.Finished {
			if !Finished(st.State) { // nothing left to run: complete
				st = Record(p, st, nil, now())
			}
			return st, false, nil
		}
		results := make(map[StepRef]StepResult, len(d.Run))
		waiting := false
		for _, ref := range d.Run {
			res := run(ref, p.Phases[ref.Phase].Steps[ref.Step])
			results[ref] = res
			waiting = waiting || !res.Done
		}
		st = Record(p, st, results, now())
		if Finished(st.State) {
			return st, false, nil
		}
		if waiting {
			return st, true, nil
		}
		if saved != nil {
			if err := saved(st); err != nil {
				return st, false, err
			}
		}
	}
}

// RunTasks runs every task of step once, with run, as KUDO does on each
// pass, and combines their results: a fatal task makes the step fatal, a
// failed one failed, a waiting one waiting (their messages joined); the
// step is done when every task is.
func RunTasks(step Step, run func(Task) StepResult) StepResult {
	var fatal, failed, waiting []string
	for _, t := range step.Tasks {
		res := run(t)
		switch {
		case res.Fatal:
			fatal = append(fatal, res.Message)
		case res.Failed:
			failed = append(failed, res.Message)
		case !res.Done:
			waiting = append(waiting, res.Message)
		}
	}
	switch {
	case len(fatal) > 0:
		return StepResult{Fatal: true, Message: strings.Join(fatal, "; ")}
	case len(failed) > 0:
		return StepResult{Failed: true, Message: strings.Join(failed, "; ")}
	case len(waiting) > 0:
		return StepResult{Message: strings.Join(waiting, "; ")}
	}
	return StepResult{Done: true}
}
