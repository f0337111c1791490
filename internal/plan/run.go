package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// The resumable driver: the plans of one revision of an installation run
// across reconciles, their states recorded in the installation's
// status.plans after every pass, so that a manager stopped anywhere
// resumes at the step it was in. The driver decides what runs next,
// resumes, and stops; the installation controller supplies the I/O
// through a Port (run a step's tasks, save the status, tell what
// happened) and says what each halt means for the installation.

// Port is what the driver asks of the world.
type Port interface {
	// RunStep runs every task of step once (RunTasks). Tasks are
	// idempotent: a step run again after a crash does no harm.
	RunStep(step Step) StepResult
	// Save writes the statuses the driver changed (the installation's
	// status.plans) before the next pass; an error stops the driver with
	// it.
	Save() error
	// Now is the time of a status change.
	Now() metav1.Time
	// Started tells that p starts running in st; Finished that a plan
	// ended in st (COMPLETE, FATAL_ERROR or ABANDONED).
	Started(p Plan, st v1alpha1.PlanStatus)
	Finished(st v1alpha1.PlanStatus)
}

// Halt is why Advance stopped.
type Halt int

const (
	// Done: every plan of the revision is COMPLETE.
	Done Halt = iota
	// Waits: a plan waits for a step (or its step failed and is retried);
	// Advance goes on from there on the next call.
	Waits
	// Stopped: a plan ended without completing (FATAL_ERROR or
	// ABANDONED); the driver runs the revision's plans no further.
	Stopped
)

// Advance runs the plans of revision rev in order, each from its status
// in statuses (started afresh when it has none of rev), as far as they
// go: until one waits (Waits, with that plan and its status), one stops
// (Stopped, likewise), or all are complete (Done). statuses is kept up to
// date, and saved through port after every pass.
func Advance(plans []Plan, rev v1alpha1.Revision, statuses *[]v1alpha1.PlanStatus, port Port) (Halt, Plan, v1alpha1.PlanStatus, error) {
	for _, p := range plans {
		st := StatusOf(*statuses, p.Name)
		if st == nil || st.Revision != rev.Number {
			started := Start(p, rev.Trigger, rev.Number, port.Now())
			st = &started
		}
		next, waiting, err := DriveOne(p, *st, statuses, port)
		switch {
		case err != nil:
			return Waits, p, next, err
		case waiting:
			return Waits, p, next, nil
		case next.State != v1alpha1.PlanComplete:
			return Stopped, p, next, nil
		}
	}
	return Done, Plan{}, v1alpha1.PlanStatus{}, nil
}

// DriveOne runs p from st with the one executor (Drive): the steps it
// offers run through port, the states of each pass are set in statuses
// and saved before the next, and port is told when p starts and
// finishes. It returns p's new status and whether p waits.
func DriveOne(p Plan, st v1alpha1.PlanStatus, statuses *[]v1alpha1.PlanStatus, port Port) (v1alpha1.PlanStatus, bool, error) {
	if st.State == v1alpha1.PlanPending {
		port.Started(p, st)
	}
	run := func(_ StepRef, step Step) StepResult { return port.RunStep(step) }
	saved := func(st v1alpha1.PlanStatus) error {
		SetStatus(statuses, st)
		return port.Save()
	}
	next, waiting, err := Drive(p, st, run, port.Now, saved)
	SetStatus(statuses, next)
	if Finished(next.State) && !Finished(st.State) {
		port.Finished(next)
	}
	return next, waiting, err
}

// Resumes reports whether plans, rendered from version, artifactDigest
// and valuesDigest, are those of the pending revision (nil: none), whose
// run then goes on instead of starting a new revision.
func Resumes(pending *v1alpha1.Revision, version, artifactDigest, valuesDigest string, plans []Plan) bool {
	return pending != nil && pending.Version == version && pending.ArtifactDigest == artifactDigest &&
		pending.ValuesDigest == valuesDigest && slices.Equal(pending.Plans, Names(plans))
}

// Begin sets in statuses the start of revision rev running plans: the
// plans of the revision it supersedes (old, nil when none) that still
// run are ABANDONED, and each of plans starts PENDING.
func Begin(statuses *[]v1alpha1.PlanStatus, old *v1alpha1.Revision, rev v1alpha1.Revision, plans []Plan, now metav1.Time) {
	if old != nil {
		for _, name := range old.Plans {
			if st := StatusOf(*statuses, name); st != nil && Running(st.State) {
				SetStatus(statuses, Abandon(*st, fmt.Sprintf("superseded by revision %d (%s)", rev.Number, rev.Trigger), now))
			}
		}
	}
	for _, p := range plans {
		SetStatus(statuses, Start(p, rev.Trigger, rev.Number, now))
	}
}

// Unfinished returns the first plan of revision last whose status in
// statuses says it did not complete, nil when all did (or none ran).
func Unfinished(statuses []v1alpha1.PlanStatus, last v1alpha1.Revision) *v1alpha1.PlanStatus {
	for _, name := range last.Plans {
		if st := StatusOf(statuses, name); st != nil && st.Revision == last.Number && st.State != v1alpha1.PlanComplete {
			return st
		}
	}
	return nil
}

// PackageRecord is what a revision record keeps of the plans of a
// release that runs them: enough to prune what a plan stops applying and
// to run the cleanup plan on uninstall.
type PackageRecord struct {
	// Params are the effective parameters of the revision.
	Params map[string]any `json:"params,omitempty"`
	// Cleanup is the cleanup plan rendered with Params.
	Cleanup *Plan `json:"cleanup,omitempty"`
	// AppliedBy maps each object of the set (its target.RefKey) to the
	// plan that last applied it, so that a plan that stops applying an
	// object prunes it.
	AppliedBy map[string]string `json:"appliedBy,omitempty"`
}

// DecodePackageRecord reads the PackageRecord of a revision record's
// package part; a record without one (a chart's) is the zero record.
func DecodePackageRecord(data []byte) PackageRecord {
	var rec PackageRecord
	if len(data) > 0 {
		_ = json.Unmarshal(data, &rec)
	}
	return rec
}

// WaitingCondition is the reason and message of an installation whose plan p
// waits in st (Advance halted with Waits): a step that errs says what to
// do.
func WaitingCondition(p Plan, st v1alpha1.PlanStatus) (reason, message string) {
	message = fmt.Sprintf("plan %s: %s", p.Name, st.Message)
	if st.State == v1alpha1.PlanError {
		message += "; fix the cause, or abandon the plan with annexctl plan abandon"
	}
	return v1alpha1.ReasonPlanRunning, message
}

// FinishedMessage is the Event telling that a plan ended in st
// (COMPLETE, FATAL_ERROR or ABANDONED): a Warning unless it completed,
// with what it said.
func FinishedMessage(st v1alpha1.PlanStatus) (warning bool, message string) {
	message = fmt.Sprintf("plan %s finished: %s", st.Name, st.State)
	if st.Message != "" {
		message += ": " + st.Message
	}
	return st.State != v1alpha1.PlanComplete, message
}

// StoppedCondition is the reason and message of an installation whose revision
// stopped in plan status st (FATAL_ERROR or ABANDONED): what stopped and
// what to do.
func StoppedCondition(st v1alpha1.PlanStatus) (reason, message string) {
	if st.State == v1alpha1.PlanAbandoned {
		return v1alpha1.ReasonPlanAbandoned, fmt.Sprintf("plan %s was abandoned (%s); it left behind %d objects (status.plans[%s].leftBehind); run a plan or change the spec to go on",
			st.Name, st.Message, len(st.LeftBehind), st.Name)
	}
	return v1alpha1.ReasonPlanFailed, fmt.Sprintf("plan %s failed: %s; fix the cause and change spec.values or spec.version, or run it again with annexctl plan run %s",
		st.Name, st.Message, st.Name)
}

// RunDummy is the result of a TaskDummy t: what its Dummy says.
func RunDummy(t Task) StepResult {
	d := t.Dummy
	switch {
	case d.WantErr && d.Fatal:
		return Fatal(t.Name, errors.New("dummy task: fatal error (fatal: true)"))
	case d.WantErr:
		return Failed(t.Name, errors.New("dummy task: error (wantErr: true)"))
	case !d.Done:
		return Waiting(t.Name, "dummy task: not done (done: false)")
	}
	return StepResult{Done: true}
}
