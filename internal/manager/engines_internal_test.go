package manager

import (
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/engine/helm"
	"github.com/annex-platform/annex/internal/engine/pkg"
	"github.com/annex-platform/annex/internal/plan"
)

// TestBundlePlansSelect pins the bundle's one plan and its triggers: the
// controller overrides an upgrade's trigger, so only an install and a
// change of the bundle's inputs are the engine's to name.
func TestBundlePlansSelect(t *testing.T) {
	bp := bundlePlans{install: plan.Plan{Name: "install"}}
	tests := []struct {
		name        string
		change      engine.Change
		wantTrigger string
	}{
		// The first revision.
		{"install", engine.Change{Install: true}, "install"},
		// Only spec.watchNamespaces, spec.resources or spec.scopedGrants
		// change a bundle's inputs without a new bundle.
		{"inputs changed", engine.Change{}, "spec.watchNamespaces, spec.resources or spec.scopedGrants changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names, trigger := bp.Select(tt.change)
			if !slices.Equal(names, []string{"install"}) || trigger != tt.wantTrigger {
				t.Errorf("Select = %v, %q; want [install], %q", names, trigger, tt.wantTrigger)
			}
		})
	}
	plans, warnings, err := bp.Render([]string{"install"})
	if err != nil || len(plans) != 1 || plans[0].Name != "install" || warnings != nil {
		t.Errorf("Render(install) = %v, %v, %v; want the install plan", plans, warnings, err)
	}
	if _, _, err := bp.Render([]string{"deploy"}); err == nil {
		t.Error("Render(deploy) succeeded; a bundle has no plan deploy")
	}
	if cleanup, _ := bp.Cleanup(); cleanup != nil {
		t.Errorf("Cleanup = %v; a bundle has no cleanup plan", cleanup)
	}
}

// TestPackagePlansSelect pins the fallback of a change that no plan
// triggers: update, else deploy; an install has none.
func TestPackagePlansSelect(t *testing.T) {
	withPlans := func(names ...string) packagePlans {
		p := &pkg.Package{}
		p.Operator.Plans = map[string]pkg.PlanSpec{}
		for _, n := range names {
			p.Operator.Plans[n] = pkg.PlanSpec{}
		}
		return packagePlans{p: p}
	}
	tests := []struct {
		name   string
		plans  packagePlans
		change engine.Change
		want   []string
	}{
		// A parameter without a trigger runs update when the package has it.
		{"changed, update", withPlans("deploy", "update"), engine.Change{Changed: []string{"x"}}, []string{"update"}},
		// Without update, deploy runs again.
		{"changed, deploy", withPlans("deploy"), engine.Change{Changed: []string{"x"}}, []string{"deploy"}},
		// An install runs deploy.
		{"install", withPlans("deploy", "update"), engine.Change{Install: true}, []string{"deploy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := tt.plans.Select(tt.change); !slices.Equal(got, tt.want) {
				t.Errorf("Select = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestChartRefusal pins which chart render errors stop an installation
// (with which reason) and which are retried.
func TestChartRefusal(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantReason string
		wantRetry  bool
	}{
		// Values the chart's schema rejects: the user changes spec.values.
		{"values", &helm.ValuesError{Extension: "podinfo 6.5.0"}, v1alpha1.ReasonValuesInvalid, false},
		// A template that fails: refused every time.
		{"template", &helm.RenderError{Extension: "podinfo 6.5.0", Message: "boom"}, v1alpha1.ReasonRenderFailed, false},
		// A broken archive: fixed in its catalog.
		{"archive", &helm.ArchiveError{Extension: "podinfo 6.5.0", Err: errors.New("truncated")}, v1alpha1.ReasonArtifactFailed, false},
		// Anything else may pass next time.
		{"other", errors.New("out of memory"), v1alpha1.ReasonRenderFailed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chartRefusal("podinfo 6.5.0", tt.err)
			if got.Reason != tt.wantReason || got.Retry != tt.wantRetry {
				t.Errorf("chartRefusal = %s (retry %v), want %s (retry %v)", got.Reason, got.Retry, tt.wantReason, tt.wantRetry)
			}
		})
	}
}

// TestChartPlan pins the plan a chart's release carries for its one pass:
// one serial phase of Helm's order, the hooks of the operation as TaskHook
// steps naming their event, the other operation's hooks left out.
func TestChartPlan(t *testing.T) {
	obj := func(kind, name, hook string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		if kind == "Job" {
			u.SetAPIVersion("batch/v1")
		}
		u.SetKind(kind)
		u.SetName(name)
		if hook != "" {
			u.SetAnnotations(map[string]string{"helm.sh/hook": hook})
		}
		return u
	}
	objects := []*unstructured.Unstructured{
		obj("Namespace", "target", ""),
		obj("ConfigMap", "config", ""),
		obj("Job", "migrate", "pre-install,pre-upgrade"),
		obj("Job", "smoke", "post-upgrade"),
	}
	for _, tc := range []struct {
		isUpgrade bool
		want      []string
	}{
		{false, []string{"target namespace/Apply/", "pre-install hooks (weight 0)/Hook/pre-install", "objects/Apply/"}},
		{true, []string{"target namespace/Apply/", "pre-upgrade hooks (weight 0)/Hook/pre-upgrade", "objects/Apply/", "post-upgrade hooks (weight 0)/Hook/post-upgrade"}},
	} {
		p := chartPlan("target", tc.isUpgrade)(nil, objects)
		if len(p.Phases) != 1 || p.Strategy != plan.Serial || p.Phases[0].Strategy != plan.Serial {
			t.Fatalf("upgrade %v: plan %+v, want one serial phase", tc.isUpgrade, p)
		}
		var got []string
		for _, st := range p.Phases[0].Steps {
			got = append(got, st.Name+"/"+string(st.Tasks[0].Kind)+"/"+st.Tasks[0].Hook)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("upgrade %v: steps %q, want %q", tc.isUpgrade, got, tc.want)
		}
	}
}
