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
	Name string `json:"name"`
	// Strategy orders the phases.
	Strategy Strategy `json:"strategy,omitempty"`
	Phases   []Phase  `json:"phases,omitempty"`
}

// Phase is a named group of steps.
type Phase struct {
	Name string `json:"name"`
	// Strategy orders the steps.
	Strategy Strategy `json:"strategy,omitempty"`
	Steps    []Step   `json:"steps,omitempty"`
}

// Step is a named group of tasks; all its tasks run on every pass, and the
// step is COMPLETE when every task is done.
type Step struct {
	Name  string `json:"name"`
	Tasks []Task `json:"tasks,omitempty"`
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
	// TaskHook applies Helm hooks one at a time, each awaited, with their
	// delete policies.
	TaskHook TaskKind = "Hook"
	// TaskDummy does nothing but what Dummy says: for tests of plans.
	TaskDummy TaskKind = "Dummy"
)

// Task is one unit of work of a step.
type Task struct {
	Name string   `json:"name"`
	Kind TaskKind `json:"kind"`
	// Hook is the Helm hook event (pre-install, post-upgrade, ...) a
	// TaskHook runs its objects for.
	Hook string `json:"hook,omitempty"`
	// Objects are applied (TaskApply) or deleted (TaskDelete), in order.
	Objects []*unstructured.Unstructured `json:"objects,omitempty"`
	// Pipe is set for TaskPipe.
	Pipe *Pipe `json:"pipe,omitempty"`
	// Dependency is set for TaskDependency.
	Dependency *Dependency `json:"dependency,omitempty"`
	// Dummy is set for TaskDummy.
	Dummy *Dummy `json:"dummy,omitempty"`
}

// Pipe runs a pod and copies files from it into Secrets or ConfigMaps.
type Pipe struct {
	// Pod is the pod to run; its files are read from its first container.
	Pod *unstructured.Unstructured `json:"pod"`
	// Files are copied, each into its own object.
	Files []PipeFile `json:"files"`
}

// PipeFile is one file a pipe copies.
type PipeFile struct {
	// File is the path of the file in the pod.
	File string `json:"file,omitempty"`
	// EnvFile, when set instead of File, is a file of KEY=VALUE lines whose
	// entries become the object's keys.
	EnvFile string `json:"envFile,omitempty"`
	// Kind is Secret or ConfigMap.
	Kind string `json:"kind"`
	// Key is the name templates use ({{ .Pipes.<key> }}).
	Key string `json:"key"`
	// Name is the name of the object the file is copied into.
	Name string `json:"name"`
}

// Dependency is another extension a task waits for.
type Dependency struct {
	// Extension is the extension's name; Version a range ("" means any).
	Extension string `json:"extension"`
	Version   string `json:"version,omitempty"`
}

// Dummy is a task that does what it is told: done, a transient error
// (WantErr), or a fatal one (WantErr and Fatal).
type Dummy struct {
	WantErr bool `json:"wantErr,omitempty"`
	Fatal   bool `json:"fatal,omitempty"`
	Done    bool `json:"done,omitempty"`
}

// Tasks returns the tasks of p of one kind, in plan order.
func (p Plan) Tasks(kind TaskKind) []Task {
	var out []Task
	for _, ph := range p.Phases {
		for _, st := range ph.Steps {
			for _, t := range st.Tasks {
				if t.Kind == kind {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// Objects returns the objects of p's tasks of one kind (TaskApply,
// TaskDelete), in plan order.
func (p Plan) Objects(kind TaskKind) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, t := range p.Tasks(kind) {
		out = append(out, t.Objects...)
	}
	return out
}
