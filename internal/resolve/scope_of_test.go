package resolve

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/plan"
)

// What decides status.content for a release: a chart's rendered set,
// hooks included; a package's plans (PlansContent); nothing when nothing
// was rendered.
func TestContent(t *testing.T) {
	crd := v1alpha1.ObjectReference{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}
	config := v1alpha1.ObjectReference{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "config"}

	// A chart: a CRD that a hook creates is content too.
	chart := &engine.Release{Objects: []*unstructured.Unstructured{
		obj("v1", "ConfigMap", "config", nil),
		obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com", map[string]string{"helm.sh/hook": "pre-install"}),
	}}
	if got, ok := Content(chart, nil, nil, "team-a", refs); !ok || len(got) != 2 || got[0] != config || got[1] != crd {
		t.Errorf("chart: got %+v, %v; want its ConfigMap and the hook's CRD", got, ok)
	}
	// A package: the plans this change runs, with the installed
	// revision's cluster-scoped objects.
	pkg := &engine.Release{Plans: noPlans{}}
	deploy := plan.Plan{Name: "deploy", Phases: []plan.Phase{{Name: "p", Steps: []plan.Step{{Name: "s", Tasks: []plan.Task{
		{Name: "config", Kind: plan.TaskApply, Objects: []*unstructured.Unstructured{obj("v1", "ConfigMap", "config", nil)}},
	}}}}}}
	if got, ok := Content(pkg, []plan.Plan{deploy}, []v1alpha1.ObjectReference{crd}, "team-a", refs); !ok || len(got) != 2 || got[0] != config || got[1] != crd {
		t.Errorf("package: got %+v, %v; want the plan's ConfigMap and the installed CRD", got, ok)
	}
	// Nothing rendered (a render that stopped): nothing to decide from.
	if got, ok := Content(nil, nil, []v1alpha1.ObjectReference{crd}, "team-a", refs); ok {
		t.Errorf("nothing rendered, yet content %+v to decide from", got)
	}
}

func obj(apiVersion, kind, name string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	u.SetAnnotations(annotations)
	return u
}

// refs places objects as the applier does: hooks are no inventory,
// ConfigMaps in the target namespace team-a.
func refs(objs []*unstructured.Unstructured) []v1alpha1.ObjectReference {
	var out []v1alpha1.ObjectReference
	for _, o := range objs {
		if _, hook := o.GetAnnotations()["helm.sh/hook"]; hook {
			continue
		}
		gv := o.GroupVersionKind()
		ref := v1alpha1.ObjectReference{Group: gv.Group, Version: gv.Version, Kind: gv.Kind, Name: o.GetName()}
		if gv.Kind == "ConfigMap" {
			ref.Namespace = "team-a"
		}
		out = append(out, ref)
	}
	return out
}

// noPlans is a PlanSet that offers nothing: the test gives the plans.
type noPlans struct{}

func (noPlans) Select(engine.Change) ([]string, string)        { return nil, "" }
func (noPlans) Render([]string) ([]plan.Plan, []string, error) { return nil, nil, nil }
func (noPlans) Cleanup() (*plan.Plan, []string)                { return nil, nil }

// A package's content: what its plans apply, with the cluster-scoped
// objects of the installed revision they do not delete, less the target
// namespace Annex created.
func TestPlansContent(t *testing.T) {
	crd := v1alpha1.ObjectReference{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}
	role := v1alpha1.ObjectReference{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "widget-reader"}
	config := v1alpha1.ObjectReference{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "config"}
	inventory := []v1alpha1.ObjectReference{crd, config, {Version: "v1", Kind: "Namespace", Name: "team-a"}, role}
	update := plan.Plan{Name: "update", Phases: []plan.Phase{{Name: "p", Steps: []plan.Step{{Name: "s", Tasks: []plan.Task{
		{Name: "config", Kind: plan.TaskApply, Objects: []*unstructured.Unstructured{obj("v1", "ConfigMap", "config", nil)}},
		// Deleted under another version than the inventory's: still gone.
		{Name: "drop", Kind: plan.TaskDelete, Objects: []*unstructured.Unstructured{obj("rbac.authorization.k8s.io/v1beta1", "ClusterRole", "widget-reader", nil)}},
	}}}}}}
	got := PlansContent([]plan.Plan{update}, inventory, "team-a", refs)
	if len(got) != 2 || got[0] != config || got[1] != crd {
		t.Errorf("got %+v, want the plan's ConfigMap and the installed CRD", got)
	}
	// Without a plan to run, the installed revision decides.
	if got := PlansContent(nil, inventory, "team-a", refs); len(got) != 2 || got[0] != crd || got[1] != role {
		t.Errorf("no plans: got %+v", got)
	}
}
