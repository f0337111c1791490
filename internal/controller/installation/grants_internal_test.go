package installation

import (
	"context"
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/target"
)

// grantsTarget tells the scope of a few resources; looking up "flaky"
// fails as discovery does when the cluster does not answer.
type grantsTarget struct{ target.Cluster }

func (grantsTarget) ResourceScope(_ context.Context, gr schema.GroupResource) (bool, bool, error) {
	switch gr.Resource {
	case "configmaps", "pods":
		return true, true, nil
	case "nodes":
		return false, true, nil
	case "flaky":
		return false, false, errors.New("discovery: connection refused")
	}
	return false, false, nil
}

func parse(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func readerRole(t *testing.T, resource string) *unstructured.Unstructured {
	return parse(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [`+resource+`], verbs: [get]}]`)
}

func readerBinding(t *testing.T) *unstructured.Unstructured {
	return parse(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader}
subjects: [{kind: ServiceAccount, name: reader, namespace: ops}]`)
}

func scopedInstallation(namespaces ...string) *v1alpha1.ExtensionInstallation {
	inst := &v1alpha1.ExtensionInstallation{}
	inst.Namespace, inst.Name, inst.Spec.Extension = "ops", "reader", "reader"
	if len(namespaces) > 0 {
		inst.Spec.ScopedGrants = &v1alpha1.ScopedGrants{Namespaces: namespaces}
	}
	return inst
}

// A package's or bundle's plans are scoped task by task, the role of one
// step found for the binding of another; the rendered plans are left as
// they were.
func TestScopeGrantsRewritesPlans(t *testing.T) {
	rendered := plan.Plan{Name: "deploy", Phases: []plan.Phase{{Name: "main", Steps: []plan.Step{
		{Name: "rbac", Tasks: []plan.Task{{Name: "role", Kind: plan.TaskApply, Objects: []*unstructured.Unstructured{readerRole(t, "configmaps")}}}},
		{Name: "bind", Tasks: []plan.Task{{Name: "binding", Kind: plan.TaskApply, Objects: []*unstructured.Unstructured{readerBinding(t)}}}},
	}}}}
	s := &scope{inst: scopedInstallation("team-a"), target: grantsTarget{}, artifact: artifact{release: withPlans(), run: &planRun{plans: []plan.Plan{rendered}}}}
	if _, err := (&Reconciler{}).scopeGrants(t.Context(), s); err != nil || s.block != nil {
		t.Fatalf("scopeGrants: %v %v", err, s.block)
	}
	var got []string
	for _, o := range plan.AllApplied(s.artifact.run.plans) {
		got = append(got, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	if want := []string{"ClusterRole /reader", "RoleBinding team-a/reader"}; !slices.Equal(got, want) {
		t.Errorf("scoped plan applies %q, want %q", got, want)
	}
	if k := rendered.Phases[0].Steps[1].Tasks[0].Objects[0].GetKind(); k != "ClusterRoleBinding" {
		t.Errorf("the rendered plan was modified: its binding is a %s", k)
	}
	want := []string{"ClusterRoleBinding reader → RoleBindings in team-a (ClusterRole reader: configmaps)"}
	if !slices.Equal(s.inst.Status.ScopedGrants, want) {
		t.Errorf("status.scopedGrants %q, want %q", s.inst.Status.ScopedGrants, want)
	}
}

// A chart's rendered objects are scoped and its values digest covers
// spec.scopedGrants; a refusal is terminal, a discovery failure retried,
// and without spec.scopedGrants nothing changes.
func TestScopeGrantsOutcomes(t *testing.T) {
	chart := func(inst *v1alpha1.ExtensionInstallation, resource string) *scope {
		return &scope{inst: inst, target: grantsTarget{}, artifact: artifact{release: &engine.Release{
			ValuesDigest: "sha256:values", Objects: []*unstructured.Unstructured{readerRole(t, resource), readerBinding(t)},
		}}}
	}
	tests := []struct {
		name     string
		scope    *scope
		wantKind blockKind
		blocked  bool
		// scoped: the binding became a RoleBinding and the digest moved.
		scoped bool
	}{
		// Scoped: RoleBindings, and a values digest of its own.
		{name: "scoped", scope: chart(scopedInstallation("team-a"), "configmaps"), scoped: true},
		// Not asked: the objects and the digest stay.
		{name: "not asked", scope: chart(scopedInstallation(), "configmaps")},
		// A resource the cluster does not serve: refused until the spec
		// changes.
		{name: "unknown resource", scope: chart(scopedInstallation("team-a"), "gadgets"), blocked: true, wantKind: blockTerminal},
		// Discovery failed: retried.
		{name: "discovery fails", scope: chart(scopedInstallation("team-a"), "flaky"), blocked: true, wantKind: blockRetry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.scope
			_, err := (&Reconciler{}).scopeGrants(t.Context(), s)
			if tt.blocked {
				if s.block == nil || s.block.Kind != tt.wantKind {
					t.Fatalf("block %+v, want kind %d", s.block, tt.wantKind)
				}
				if (err != nil) != (tt.wantKind == blockRetry) {
					t.Fatalf("error %v: only a retry returns one", err)
				}
				return
			}
			if err != nil || s.block != nil {
				t.Fatalf("scopeGrants: %v %v", err, s.block)
			}
			kind := s.artifact.release.Objects[1].GetKind()
			moved := s.artifact.release.ValuesDigest != "sha256:values"
			if scoped := kind == "RoleBinding"; scoped != tt.scoped || moved != tt.scoped {
				t.Errorf("binding is a %s, digest %s; want scoped=%v", kind, s.artifact.release.ValuesDigest, tt.scoped)
			}
		})
	}
}
