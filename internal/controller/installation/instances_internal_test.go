package installation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/depend"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/readiness"
	"github.com/annex-platform/annex/internal/resolve"
	"github.com/annex-platform/annex/internal/target"
)

// scopeTarget is a target.Cluster whose applier only tells scopes: the kinds in
// clusterKinds are cluster-scoped. Nothing else of it may be called.
type scopeTarget struct{ target.Cluster }

func (scopeTarget) Applier() target.Applier { return scopeApplier{} }

type scopeApplier struct{ target.Applier }

var clusterKinds = map[string]bool{"CustomResourceDefinition": true, "ClusterRole": true, "Namespace": true,
	"ValidatingWebhookConfiguration": true, "APIService": true}

func (scopeApplier) Refs(objects []*unstructured.Unstructured, ns string) []v1alpha1.ObjectReference {
	var out []v1alpha1.ObjectReference
	for _, o := range objects {
		if _, hook := o.GetAnnotations()["helm.sh/hook"]; hook {
			continue // as the applier: hooks are no inventory
		}
		gvk := o.GroupVersionKind()
		ref := v1alpha1.ObjectReference{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Name: o.GetName(), Namespace: o.GetNamespace()}
		switch {
		case clusterKinds[gvk.Kind]:
			ref.Namespace = ""
		case ref.Namespace == "":
			ref.Namespace = ns
		}
		out = append(out, ref)
	}
	return out
}

func object(apiVersion, kind, name string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	if annotations != nil {
		u.SetAnnotations(annotations)
	}
	return u
}

var (
	crd         = v1alpha1.ObjectReference{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}
	clusterRole = v1alpha1.ObjectReference{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "widget-reader"}
	webhook     = v1alpha1.ObjectReference{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration", Name: "widgets"}
	ownNS       = v1alpha1.ObjectReference{Version: "v1", Kind: "Namespace", Name: "aaa"}
	configMap   = v1alpha1.ObjectReference{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "config"}
)

// The object named is the one that best says why: CRDs first, then
// webhooks and APIServices, then the rest by group, kind and name.
func TestFirstClusterScoped(t *testing.T) {
	tests := []struct {
		name string
		refs []v1alpha1.ObjectReference
		want *v1alpha1.ObjectReference
	}{
		// Namespaced only.
		{name: "none", refs: []v1alpha1.ObjectReference{configMap}},
		// A CRD before anything else, wherever it is listed.
		{name: "crd first", refs: []v1alpha1.ObjectReference{ownNS, configMap, clusterRole, webhook, crd}, want: &crd},
		// A webhook before a ClusterRole or a Namespace.
		{name: "webhook next", refs: []v1alpha1.ObjectReference{clusterRole, ownNS, webhook}, want: &webhook},
		// Otherwise by group, kind and name: a chart's own Namespace
		// (core group) before a ClusterRole.
		{name: "by group", refs: []v1alpha1.ObjectReference{clusterRole, ownNS}, want: &ownNS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resolve.FirstClusterScoped(tt.refs)
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// An instance whose content turns out cluster-scoped is stopped when
// another installation of the extension, not known to be namespaced only,
// runs or is resolved to another version; the message names the object
// and each of them.
func TestCheckScopeConflict(t *testing.T) {
	mk := func(ns, installed string, content *v1alpha1.ContentScope) *v1alpha1.ExtensionInstallation {
		i := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x", Generation: 1}}
		i.Spec.Extension, i.Status.InstalledVersion, i.Status.Content = "x", installed, content
		return i
	}
	version := func(v string) resolve.Selection {
		return resolve.Selection{Extension: "x", Version: v1alpha1.ExtensionVersion{Version: v}}
	}
	self := mk("team-b", "", nil)
	others := []*v1alpha1.ExtensionInstallation{
		mk("team-a", "1.0.0", &v1alpha1.ContentScope{Version: "1.0.0", ClusterScoped: &crd}), // runs 1.0.0
		mk("team-c", "", nil),      // resolved to 1.0.0, content unknown
		mk("team-d", "1.5.0", nil), // failed, keeps 1.5.0
		mk("team-e", "1.0.0", &v1alpha1.ContentScope{Version: "1.0.0"}),                          // namespaced only: shares nothing
		mk("team-f", "2.0.0", &v1alpha1.ContentScope{Version: "2.0.0", ClusterScoped: &webhook}), // at our version
	}
	instance := version("2.0.0")
	instance.Instance = "team-b/x"
	shared := version("1.0.0")
	p := &resolve.Resolution{
		Selected: map[string]resolve.Selection{"x": shared, resolve.InstanceKey("x", "team-b/x"): instance, resolve.InstanceKey("x", "team-f/x"): version("2.0.0")},
		Failed:   map[string]*resolve.Explanation{"team-d/x": {Message: "no"}},
	}
	s := &scope{inst: self, target: scopeTarget{}, choice: instance,
		cluster:  &depend.Cluster{Installations: append([]*v1alpha1.ExtensionInstallation{self}, others...), Resolution: p},
		artifact: artifact{release: &engine.Release{CRDs: []*unstructured.Unstructured{object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com", nil)}}},
	}
	if _, err := (&Reconciler{}).checkScope(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if c := self.Status.Content; c == nil || c.Version != "2.0.0" || c.ObservedGeneration != 1 || c.ClusterScoped == nil || *c.ClusterScoped != crd {
		t.Errorf("status.content %+v", c)
	}
	want := "x 2.0.0 has the cluster-scoped CustomResourceDefinition widgets.example.com, so one version of x serves the whole cluster, " +
		"and team-a/x runs 1.0.0, team-c/x is resolved to 1.0.0, team-d/x runs 1.5.0; " +
		"set spec.version of team-b/x, or of team-a/x and team-c/x and team-d/x, so that they share a version. Nothing of x 2.0.0 was applied."
	if s.block == nil || s.block.Kind != blockTerminal || s.block.Reason != v1alpha1.ReasonNoMatchingVersion || s.block.Message != want {
		t.Fatalf("block %+v\nwant %s", s.block, want)
	}
	if c := meta.FindStatusCondition(self.Status.Conditions, v1alpha1.ConditionResolved); c == nil || c.Status != metav1.ConditionFalse || c.Message != want {
		t.Errorf("Resolved %+v", c)
	}

	// Shared, it agrees with the others by construction: no check.
	self.Status = v1alpha1.ExtensionInstallationStatus{}
	s.block, s.choice = nil, shared
	if _, err := (&Reconciler{}).checkScope(t.Context(), s); err != nil || s.block != nil {
		t.Errorf("a shared installation was stopped: %v %+v", err, s.block)
	}
	// Namespaced only, apart: it says so.
	s.artifact.release, s.choice = &engine.Release{}, instance
	readiness.Set(self, v1alpha1.ConditionResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "chose x 2.0.0")
	if _, err := (&Reconciler{}).checkScope(t.Context(), s); err != nil || s.block != nil {
		t.Fatalf("%v %+v", err, s.block)
	}
	if c := meta.FindStatusCondition(self.Status.Conditions, v1alpha1.ConditionResolved); !strings.HasSuffix(c.Message, "a version of its own, apart from the other installations of x: its content is namespaced only") {
		t.Errorf("Resolved %q", c.Message)
	}
}

// withPlans is a release that runs plans (Release.Resumable), for a
// scope whose plans to run a test gives itself.
func withPlans() *engine.Release { return &engine.Release{Plans: givenPlans{}} }

// givenPlans is a PlanSet that offers nothing: the test sets the plans.
type givenPlans struct{}

func (givenPlans) Select(engine.Change) ([]string, string)        { return nil, "" }
func (givenPlans) Render([]string) ([]plan.Plan, []string, error) { return nil, nil, nil }
func (givenPlans) Cleanup() (*plan.Plan, []string)                { return nil, nil }
