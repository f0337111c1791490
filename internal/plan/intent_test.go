package plan

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A new revision records the state its plans leave over the installed
// one, which plan applied each object, and, in its inventory, also what
// a later step deletes again.
func TestIntentOf(t *testing.T) {
	obj := func(kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind(kind)
		u.SetName(name)
		return u
	}
	key := func(o *unstructured.Unstructured) string { return o.GetKind() + "/" + o.GetName() }
	ns, old, cfg, tmp := obj("Namespace", "apps"), obj("ConfigMap", "old"), obj("ConfigMap", "config"), obj("Job", "migrate")
	deploy := Plan{Name: "deploy", Phases: []Phase{{Name: "p", Steps: []Step{{Name: "s", Tasks: []Task{
		{Name: "config", Kind: TaskApply, Objects: []*unstructured.Unstructured{cfg, tmp}},
		{Name: "done", Kind: TaskDelete, Objects: []*unstructured.Unstructured{tmp}},
	}}}}}}
	cleanup := &Plan{Name: "cleanup"}
	in, err := IntentOf([]*unstructured.Unstructured{ns}, []*unstructured.Unstructured{old}, nil, []Plan{deploy}, map[string]any{"size": 2}, cleanup, key)
	if err != nil {
		t.Fatal(err)
	}
	names := func(objs []*unstructured.Unstructured) (out []string) {
		for _, o := range objs {
			out = append(out, key(o))
		}
		return out
	}
	if got := names(in.State); len(got) != 3 || got[0] != "Namespace/apps" || got[1] != "ConfigMap/old" || got[2] != "ConfigMap/config" {
		t.Errorf("State = %v", got)
	}
	if got := names(in.Everything); len(got) != 5 || got[4] != "Job/migrate" {
		t.Errorf("Everything = %v, want the state and all the plan applies", got)
	}
	rec := DecodePackageRecord(in.Package)
	if rec.Params["size"] != float64(2) || rec.Cleanup == nil || rec.Cleanup.Name != "cleanup" || rec.AppliedBy["ConfigMap/config"] != "deploy" {
		t.Errorf("Package = %s", in.Package)
	}
}
