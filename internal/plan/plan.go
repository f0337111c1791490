// Package plan is the one plan executor behind every engine. An engine
// turns an artifact and its parameters into plans: named plans of phases
// (serial or parallel) of steps of tasks, each task an object set to apply
// or delete (or a pipe, a dependency, a test task). Next, a pure function,
// reads the recorded state of a plan's steps and says which steps run now;
// the caller runs them (all I/O is theirs) and records the results with
// Record, which returns the plan's next state. A plan interrupted anywhere
// resumes from its recorded state: running a step again is harmless,
// because every task is idempotent.
package plan

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Strategy says how the phases of a plan, or the steps of a phase, run.
type Strategy string

const (
	// Serial runs one after another; the next starts when the previous is
	// COMPLETE.
	Serial Strategy = "serial"
	// Parallel runs all at once. It is the default, as in KUDO, where a
	// strategy other than "serial" behaves as parallel.
	Parallel Strategy = "parallel"
)

// Plan is one named plan: phases of steps of tasks.
type Plan struct {
	Name string
	// Strategy orders the phases.
	Strategy Strategy
	Phases   []Phase
}

// Phase is a named group of steps.
type Phase struct {
	Name string
	// Strategy orders the steps.
	Strategy Strategy
	Steps    []Step
}

// Step is a named group of tasks; all its tasks run on every pass, and the
// step is COMPLETE when every task is done.
type Step struct {
	Name  string
	Tasks []Task
}

// TaskKind says what a task does.
type TaskKind string

const (
	// TaskApply applies Objects and is done when they are healthy.
	TaskApply TaskKind = "Apply"
	// TaskDelete deletes Objects and is done when they are gone.
	TaskDelete TaskKind = "Delete"
	// TaskPipe runs Pipe.Pod and copies files it produced into Secrets or
	// ConfigMaps.
	TaskPipe TaskKind = "Pipe"
	// TaskDependency is done when another extension, installed by its own
	// installation on the same cluster, is Ready in a version range.
	TaskDependency TaskKind = "Dependency"
	// TaskDummy does nothing but what Dummy says: for tests of plans.
	TaskDummy TaskKind = "Dummy"
)

// Task is one unit of work of a step.
type Task struct {
	Name string
	Kind TaskKind
	// Objects are applied (TaskApply) or deleted (TaskDelete), in order.
	Objects []*unstructured.Unstructured
	// Pipe is set for TaskPipe.
	Pipe *Pipe
	// Dependency is set for TaskDependency.
	Dependency *Dependency
	// Dummy is set for TaskDummy.
	Dummy *Dummy
}

// Pipe runs a pod and copies files from it into Secrets or ConfigMaps.
type Pipe struct {
	// Pod is the pod to run; its files are read from its first container.
	Pod *unstructured.Unstructured
	// Files are copied, each into its own object.
	Files []PipeFile
}

// PipeFile is one file a pipe copies.
type PipeFile struct {
	// File is the path of the file in the pod.
	File string
	// EnvFile, when set instead of File, is a file of KEY=VALUE lines whose
	// entries become the object's keys.
	EnvFile string
	// Kind is Secret or ConfigMap.
	Kind string
	// Key is the name templates use ({{ .Pipes.<key> }}).
	Key string
	// Name is the name of the object the file is copied into.
	Name string
}

// Dependency is another extension a task waits for.
type Dependency struct {
	// Extension is the extension's name; Version a range ("" means any).
	Extension, Version string
}

// Dummy is a task that does what it is told: done, a transient error
// (WantErr), or a fatal one (WantErr and Fatal).
type Dummy struct {
	WantErr, Fatal, Done bool
}

// Objects returns the objects every apply task of p applies, in plan
// order.
func (p Plan) Objects(kind TaskKind) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, ph := range p.Phases {
		for _, st := range ph.Steps {
			for _, t := range st.Tasks {
				if t.Kind == kind {
					out = append(out, t.Objects...)
				}
			}
		}
	}
	return out
}
