package plan

import (
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// What plans leave behind, computed from the plans and their status
// alone: the state a revision records before its plans run, everything
// they may apply (the inventory's share of a crash), what a stopped plan
// left, and the status of each plan. Pure: the caller names objects
// (key) as its inventory does.

// StateAfter returns the objects left once plans ran, in order, over
// prev (the installed revision's state, appliedBy saying which plan
// applied each object, by key): each plan drops what it applied before,
// then its tasks, in plan order, add what they apply and remove what
// they delete. The second result is appliedBy for the state returned.
// key names an object as the caller's inventory does (two objects with
// one key are the same object).
func StateAfter(prev []*unstructured.Unstructured, appliedBy map[string]string, plans []Plan, key func(*unstructured.Unstructured) string) ([]*unstructured.Unstructured, map[string]string) {
	type entry struct {
		obj  *unstructured.Unstructured
		plan string
	}
	var order []string
	state := map[string]entry{}
	put := func(obj *unstructured.Unstructured, by string) {
		k := key(obj)
		if _, ok := state[k]; !ok {
			order = append(order, k)
		}
		state[k] = entry{obj: obj, plan: by}
	}
	for _, o := range prev {
		put(o, appliedBy[key(o)])
	}
	for _, p := range plans {
		for k, e := range state {
			if e.plan == p.Name {
				delete(state, k)
			}
		}
		// Tasks in plan order: a step that deletes what an earlier step
		// applied (a Job run once) leaves it out.
		for _, ph := range p.Phases {
			for _, st := range ph.Steps {
				for _, t := range st.Tasks {
					switch t.Kind {
					case TaskApply:
						for _, o := range t.Objects {
							put(o, p.Name)
						}
					case TaskDelete:
						for _, o := range t.Objects {
							delete(state, key(o))
						}
					case TaskPipe:
						for _, o := range PipeOutputs(t.Pipe)[1:] { // the pod is gone once the pipe is done
							put(o, p.Name)
						}
					}
				}
			}
		}
	}
	var out []*unstructured.Unstructured
	by := map[string]string{}
	for _, k := range order {
		if e, ok := state[k]; ok {
			out = append(out, e.obj)
			by[k] = e.plan
			delete(state, k) // a key put twice is listed once
		}
	}
	return out, by
}

// AllApplied is every object the plans may write: what they apply, and
// the pods and outputs of their pipes.
func AllApplied(plans []Plan) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, p := range plans {
		out = append(out, p.Objects(TaskApply)...)
		for _, t := range p.Tasks(TaskPipe) {
			out = append(out, PipeOutputs(t.Pipe)...)
		}
	}
	return out
}

// PipeOutputs returns, for the inventory, the objects a pipe task
// writes: its pod, then the Secret or ConfigMap of each file.
func PipeOutputs(p *Pipe) []*unstructured.Unstructured {
	out := []*unstructured.Unstructured{p.Pod}
	for _, f := range p.Files {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind(f.Kind)
		u.SetName(f.Name)
		out = append(out, u)
	}
	return out
}

// LeftBehind lists what the started steps of a stopped plan apply.
func LeftBehind(p Plan, st v1alpha1.PlanStatus) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	for _, ref := range Started(p, st) {
		for _, t := range p.Phases[ref.Phase].Steps[ref.Step].Tasks {
			if t.Kind == TaskApply {
				objs = append(objs, t.Objects...)
			}
		}
	}
	return objs
}

// Find returns the plan name of plans; nil when there is none.
func Find(plans []Plan, name string) *Plan {
	for i := range plans {
		if plans[i].Name == name {
			return &plans[i]
		}
	}
	return nil
}

// Names are the names of plans, in order.
func Names(plans []Plan) []string {
	out := make([]string, len(plans))
	for i, p := range plans {
		out[i] = p.Name
	}
	return out
}

// StatusOf returns the status of plan name in statuses (status.plans),
// to be changed in place; nil when it has none.
func StatusOf(statuses []v1alpha1.PlanStatus, name string) *v1alpha1.PlanStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// SetStatus puts st into statuses, in place of the status of its plan
// or, for a plan without one, at the end.
func SetStatus(statuses *[]v1alpha1.PlanStatus, st v1alpha1.PlanStatus) {
	if cur := StatusOf(*statuses, st.Name); cur != nil {
		*cur = st
		return
	}
	*statuses = append(*statuses, st)
}

// RewriteApplies returns plans with the objects of their Apply tasks
// rewritten by rewrite (scoped grants, kept CRDs); plans is not
// modified.
func RewriteApplies(plans []Plan, rewrite func([]*unstructured.Unstructured) []*unstructured.Unstructured) []Plan {
	out := slices.Clone(plans)
	for i := range out {
		phases := slices.Clone(out[i].Phases)
		for j := range phases {
			steps := slices.Clone(phases[j].Steps)
			for k := range steps {
				tasks := slices.Clone(steps[k].Tasks)
				for l := range tasks {
					if tasks[l].Kind == TaskApply {
						tasks[l].Objects = rewrite(tasks[l].Objects)
					}
				}
				steps[k].Tasks = tasks
			}
			phases[j].Steps = steps
		}
		out[i].Phases = phases
	}
	return out
}

// Driftable leaves out of objs the run-to-completion objects (Jobs,
// Pods): a plan runs them once; correcting their drift would run them
// again.
func Driftable(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		gk := o.GroupVersionKind().GroupKind()
		if (gk.Group == "batch" && gk.Kind == "Job") || (gk.Group == "" && gk.Kind == "Pod") {
			continue
		}
		out = append(out, o)
	}
	return out
}

// Intent is what a new revision running plans records before any of
// them runs.
type Intent struct {
	// State is what the plans leave (StateAfter), the revision's set.
	State []*unstructured.Unstructured
	// Package is the record's package part: params, cleanup and
	// appliedBy, encoded.
	Package []byte
	// Everything is all the plans may apply besides State: the
	// revision's inventory, so that a crash at any step leaves nothing
	// unowned.
	Everything []*unstructured.Unstructured
}

// IntentOf computes the Intent of a revision running plans (rendered
// with params, with cleanup as their cleanup plan) over prev, the
// installed revision's objects with namespace (the target namespace
// Annex creates, or none) in front, and prevPackage, its record's
// package part. key names objects as in StateAfter.
func IntentOf(namespace, prev []*unstructured.Unstructured, prevPackage []byte, plans []Plan, params map[string]any, cleanup *Plan,
	key func(*unstructured.Unstructured) string) (Intent, error) {
	state, appliedBy := StateAfter(slices.Concat(namespace, prev), DecodePackageRecord(prevPackage).AppliedBy, plans, key)
	pkg, err := json.Marshal(PackageRecord{Params: params, Cleanup: cleanup, AppliedBy: appliedBy})
	if err != nil {
		return Intent{}, err
	}
	return Intent{State: state, Package: pkg, Everything: slices.Concat(state, AllApplied(plans))}, nil
}
