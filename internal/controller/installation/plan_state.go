package installation

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/plan"
)

// What plans leave behind, computed from the plans and their status
// alone: the state a package's revision records before its plans run,
// everything they may apply (the inventory's share of a crash), what a
// stopped plan left, and the status of each plan.

// stateAfter returns the objects a package leaves once plans ran, in
// order, over prev (the installed revision's state, appliedBy saying which
// plan applied each): each plan drops what it applied before, then its
// tasks, in plan order, add what they apply and remove what they delete.
func stateAfter(prev []*unstructured.Unstructured, appliedBy map[string]string, plans []plan.Plan, a Applier, ns string) ([]*unstructured.Unstructured, map[string]string) {
	type entry struct {
		obj  *unstructured.Unstructured
		plan string
	}
	var order []string
	state := map[string]entry{}
	put := func(obj *unstructured.Unstructured, by string) {
		key := refKey(a.Refs([]*unstructured.Unstructured{obj}, ns)[0])
		if _, ok := state[key]; !ok {
			order = append(order, key)
		}
		state[key] = entry{obj: obj, plan: by}
	}
	for _, o := range prev {
		key := refKey(a.Refs([]*unstructured.Unstructured{o}, ns)[0])
		put(o, appliedBy[key])
	}
	for _, p := range plans {
		for key, e := range state {
			if e.plan == p.Name {
				delete(state, key)
			}
		}
		// Tasks in plan order: a step that deletes what an earlier step
		// applied (a Job run once) leaves it out.
		for _, ph := range p.Phases {
			for _, st := range ph.Steps {
				for _, t := range st.Tasks {
					switch t.Kind {
					case plan.TaskApply:
						for _, o := range t.Objects {
							put(o, p.Name)
						}
					case plan.TaskDelete:
						for _, o := range t.Objects {
							delete(state, refKey(a.Refs([]*unstructured.Unstructured{o}, ns)[0]))
						}
					case plan.TaskPipe:
						for _, o := range pipeOutputs(t.Pipe)[1:] { // the pod is gone once the pipe is done
							put(o, p.Name)
						}
					}
				}
			}
		}
	}
	var out []*unstructured.Unstructured
	by := map[string]string{}
	for _, key := range order {
		if e, ok := state[key]; ok {
			out = append(out, e.obj)
			by[key] = e.plan
			delete(state, key) // a key put twice is listed once
		}
	}
	return out, by
}

// allApplied is every object the plans may write: what they apply, and
// the pods and outputs of their pipes.
func allApplied(plans []plan.Plan) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, p := range plans {
		out = append(out, p.Objects(plan.TaskApply)...)
		for _, t := range p.Tasks(plan.TaskPipe) {
			out = append(out, pipeOutputs(t.Pipe)...)
		}
	}
	return out
}

// leftBehind lists what the started steps of a stopped plan apply.
func leftBehind(p plan.Plan, st v1alpha1.PlanStatus, a Applier, ns string) []v1alpha1.ObjectReference {
	var objs []*unstructured.Unstructured
	for _, ref := range plan.Started(p, st) {
		for _, t := range p.Phases[ref.Phase].Steps[ref.Step].Tasks {
			if t.Kind == plan.TaskApply {
				objs = append(objs, t.Objects...)
			}
		}
	}
	refs, _ := unionRefs(nil, a.Refs(objs, ns))
	return refs
}
func findPlan(plans []plan.Plan, name string) *plan.Plan {
	for i := range plans {
		if plans[i].Name == name {
			return &plans[i]
		}
	}
	return nil
}
func planStatus(inst *v1alpha1.ExtensionInstallation, name string) *v1alpha1.PlanStatus {
	for i := range inst.Status.Plans {
		if inst.Status.Plans[i].Name == name {
			return &inst.Status.Plans[i]
		}
	}
	return nil
}
func setPlanStatus(inst *v1alpha1.ExtensionInstallation, st v1alpha1.PlanStatus) {
	if cur := planStatus(inst, st.Name); cur != nil {
		*cur = st
		return
	}
	inst.Status.Plans = append(inst.Status.Plans, st)
}
