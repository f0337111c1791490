package apply

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestPhaseOf(t *testing.T) {
	greeting := schema.GroupKind{Group: "demo.annex.dev", Kind: "Greeting"}
	crds := crdGroupKinds{greeting: true}
	tests := []struct {
		name string
		gk   schema.GroupKind
		want phase
	}{
		// CRDs come first so that their kinds exist for the rest.
		{"crd", schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, phaseCRDs},
		// Namespaces before anything that lives in them.
		{"namespace", schema.GroupKind{Kind: "Namespace"}, phaseNamespaces},
		// Identities and permissions before the workloads that use them.
		{"service account", schema.GroupKind{Kind: "ServiceAccount"}, phaseRBAC},
		{"role", schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"}, phaseRBAC},
		{"cluster role", schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}, phaseRBAC},
		{"role binding", schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}, phaseRBAC},
		{"cluster role binding", schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}, phaseRBAC},
		// Workloads and config are "everything else".
		{"deployment", schema.GroupKind{Group: "apps", Kind: "Deployment"}, phaseObjects},
		{"configmap", schema.GroupKind{Kind: "ConfigMap"}, phaseObjects},
		// A Role-like name in another group is not RBAC.
		{"role of another group", schema.GroupKind{Group: "iam.example.com", Kind: "Role"}, phaseObjects},
		// A custom resource whose CRD is in the set comes last.
		{"custom resource of the set", greeting, phaseCustomResources},
		// A custom resource of a CRD installed earlier is an ordinary object.
		{"custom resource of an installed CRD", schema.GroupKind{Group: "cert-manager.io", Kind: "Issuer"}, phaseObjects},
		// Webhook configurations after their servers, and deleted first.
		{"validating webhook", schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}, phaseWebhooks},
		{"mutating webhook", schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}, phaseWebhooks},
		// Same kind name, other group: not the set's CRD.
		{"same kind other group", schema.GroupKind{Group: "other.dev", Kind: "Greeting"}, phaseObjects},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := phaseOf(tt.gk, crds); got != tt.want {
				t.Errorf("phaseOf(%v) = %d, want %d", tt.gk, got, tt.want)
			}
		})
	}
}

func TestDefinedKinds(t *testing.T) {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "greetings.demo.annex.dev"},
		"spec": map[string]any{
			"group": "demo.annex.dev",
			"names": map[string]any{"kind": "Greeting", "plural": "greetings"},
		},
	}}
	// A ConfigMap with a spec-like shape defines nothing.
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "x"},
		"spec":     map[string]any{"group": "a", "names": map[string]any{"kind": "B"}},
	}}
	got := definedKinds([]*unstructured.Unstructured{crd, cm})
	want := crdGroupKinds{{Group: "demo.annex.dev", Kind: "Greeting"}: true}
	if len(got) != len(want) || !got[schema.GroupKind{Group: "demo.annex.dev", Kind: "Greeting"}] {
		t.Errorf("definedKinds = %v, want %v", got, want)
	}
}

func ref(group, version, kind, ns, name string) v1alpha1.ObjectReference {
	return v1alpha1.ObjectReference{Group: group, Version: version, Kind: kind, Namespace: ns, Name: name}
}

func TestSortInventory(t *testing.T) {
	cm := ref("", "v1", "ConfigMap", "demo", "b")
	cmA := ref("", "v1", "ConfigMap", "demo", "a")
	cmOtherNS := ref("", "v1", "ConfigMap", "alpha", "z")
	deploy := ref("apps", "v1", "Deployment", "demo", "web")
	ns := ref("", "v1", "Namespace", "", "demo")
	crd := ref("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "", "greetings.demo.annex.dev")
	cr := ref("demo.annex.dev", "v1", "Greeting", "demo", "hi")
	sa := ref("", "v1", "ServiceAccount", "demo", "web")

	entries := []phasedRef{
		{ref: cr, phase: phaseCustomResources}, {ref: deploy, phase: phaseObjects}, {ref: cm, phase: phaseObjects},
		{ref: sa, phase: phaseRBAC}, {ref: cmA, phase: phaseObjects}, {ref: ns, phase: phaseNamespaces},
		{ref: crd, phase: phaseCRDs}, {ref: cmOtherNS, phase: phaseObjects},
	}
	want := []v1alpha1.ObjectReference{crd, ns, sa, cmOtherNS, cmA, cm, deploy, cr}
	got, _ := sortInventory(entries)
	if !slices.Equal(got, want) {
		t.Errorf("sortInventory =\n%v\nwant\n%v", got, want)
	}
	// The order does not depend on the order the entries came in.
	slices.Reverse(entries)
	if again, _ := sortInventory(entries); !slices.Equal(again, want) {
		t.Errorf("sortInventory of reversed input =\n%v\nwant\n%v", again, want)
	}
}

func TestRemoved(t *testing.T) {
	a := ref("", "v1", "ConfigMap", "demo", "a")
	b := ref("", "v1", "ConfigMap", "demo", "b")
	bOtherNS := ref("", "v1", "ConfigMap", "other", "b")
	deployV1 := ref("apps", "v1", "Deployment", "demo", "web")
	deployV1beta2 := ref("apps", "v1beta2", "Deployment", "demo", "web")
	tests := []struct {
		name         string
		old, current []v1alpha1.ObjectReference
		want         []v1alpha1.ObjectReference
	}{
		// Nothing recorded yet: nothing to prune.
		{"first apply", nil, []v1alpha1.ObjectReference{a}, nil},
		// The same set: nothing left.
		{"unchanged", []v1alpha1.ObjectReference{a, b}, []v1alpha1.ObjectReference{b, a}, nil},
		// One object left the set.
		{"one left", []v1alpha1.ObjectReference{a, b}, []v1alpha1.ObjectReference{a}, []v1alpha1.ObjectReference{b}},
		// Moving namespace is a different object: the old one goes.
		{"moved namespace", []v1alpha1.ObjectReference{b}, []v1alpha1.ObjectReference{bOtherNS}, []v1alpha1.ObjectReference{b}},
		// A new API version of the same object is not a removal.
		{"version change", []v1alpha1.ObjectReference{deployV1beta2}, []v1alpha1.ObjectReference{deployV1}, nil},
		// Everything left, in the order of old.
		{"all left", []v1alpha1.ObjectReference{b, a}, nil, []v1alpha1.ObjectReference{b, a}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := removed(tt.old, tt.current); !slices.Equal(got, tt.want) {
				t.Errorf("removed = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		ref  v1alpha1.ObjectReference
		want string
	}{
		// Namespaced: "Kind namespace/name".
		{ref("apps", "v1", "Deployment", "demo", "web"), "Deployment demo/web"},
		// Cluster-scoped: "Kind name".
		{ref("", "v1", "Namespace", "", "demo"), "Namespace demo"},
	}
	for _, tt := range tests {
		if got := describe(tt.ref); got != tt.want {
			t.Errorf("describe(%v) = %q, want %q", tt.ref, got, tt.want)
		}
	}
}

// unversioned returns refs without their resourceVersions, to compare an
// inventory with references written by hand.
func unversioned(refs []v1alpha1.ObjectReference) []v1alpha1.ObjectReference {
	out := slices.Clone(refs)
	for i := range out {
		out[i].ResourceVersion = ""
	}
	return out
}
