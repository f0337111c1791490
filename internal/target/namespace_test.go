package target

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
)

// When Annex creates an installation's target namespace.
func TestCreatesNamespace(t *testing.T) {
	created := v1alpha1.ObjectReference{Version: "v1", Kind: "Namespace", Name: "apps"}
	for _, tc := range []struct {
		name                    string
		cluster, ns             string
		inventory               []v1alpha1.ObjectReference
		wantRecorded, wantCandi bool
	}{
		// The hub, in the installation's own namespace: it exists.
		{name: "own namespace on the hub", ns: "team-a"},
		// The installation's namespace on a managed cluster may be missing there.
		{name: "own namespace on a cluster", cluster: "east", ns: "team-a", wantCandi: true},
		// Another namespace on the hub: created if missing.
		{name: "other namespace", ns: "apps", wantCandi: true},
		// An earlier revision created it: it stays Annex's.
		{name: "recorded", ns: "apps", inventory: []v1alpha1.ObjectReference{created}, wantRecorded: true, wantCandi: true},
		// A namespaced object of that name is not the Namespace.
		{name: "not a namespace", ns: "apps", inventory: []v1alpha1.ObjectReference{{Kind: "ConfigMap", Namespace: "apps", Name: "apps"}}, wantCandi: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "x"}}
			inst.Spec.Cluster, inst.Status.Inventory = tc.cluster, tc.inventory
			recorded, candidate := CreatesNamespace(inst, tc.ns)
			if recorded != tc.wantRecorded || candidate != tc.wantCandi {
				t.Errorf("CreatesNamespace = %v, %v; want %v, %v", recorded, candidate, tc.wantRecorded, tc.wantCandi)
			}
		})
	}
}

// A hook is no Namespace of the set and loses its annotation, and only
// its, to tell its scope.
func TestHooksAndNamespaces(t *testing.T) {
	obj := func(kind, name string, hook bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind(kind)
		u.SetName(name)
		a := map[string]string{"keep": "me"}
		if hook {
			a[hookAnnotation] = "pre-install"
		}
		u.SetAnnotations(a)
		return u
	}
	hookNS, ns, cm := obj("Namespace", "apps", true), obj("Namespace", "apps", false), obj("ConfigMap", "apps", false)
	if got := NamespaceIn([]*unstructured.Unstructured{cm, hookNS}, "apps"); got != nil {
		t.Errorf("a hook Namespace counted: %v", got)
	}
	if got := NamespaceIn([]*unstructured.Unstructured{hookNS, ns}, "apps"); len(got) != 1 || got[0] != ns {
		t.Errorf("NamespaceIn = %v, want the plain Namespace", got)
	}
	if HasHooks([]*unstructured.Unstructured{ns, cm}) || !HasHooks([]*unstructured.Unstructured{cm, hookNS}) {
		t.Error("HasHooks wrong")
	}
	if got := WithoutHook(cm); got != cm {
		t.Error("WithoutHook copied a plain object")
	}
	got := WithoutHook(hookNS)
	if IsHook(got) || got.GetAnnotations()["keep"] != "me" || !IsHook(hookNS) {
		t.Errorf("WithoutHook = %v; original hook kept: %v", got.GetAnnotations(), IsHook(hookNS))
	}
	if n := NamespaceObject("apps"); n.GetKind() != "Namespace" || n.GetName() != "apps" || n.GetAPIVersion() != "v1" {
		t.Errorf("NamespaceObject = %v", n)
	}
}

// An apply that adopts takes existing objects over from the other tool's
// managers, deferring a release's matching objects; without an adoption
// the options stay.
func TestApplyOptionsAdopting(t *testing.T) {
	base := ApplyOptions{Create: true}
	if got := base.Adopting(nil); got.TakeOwnership || got.HandOver != nil || !got.Create {
		t.Errorf("no adoption: %+v", got)
	}
	rel := &adopt.Takeover{Release: &adopt.Release{Name: "web"}, Managers: []string{"helm"}}
	if got := base.Adopting(rel); !got.TakeOwnership || !got.DeferHandOver || len(got.HandOver) != 1 || !got.Create {
		t.Errorf("release: %+v", got)
	}
	op := &adopt.Takeover{Operator: &adopt.Operator{Subscription: "etcd"}, Managers: []string{"olm"}}
	if got := base.Adopting(op); !got.TakeOwnership || got.DeferHandOver || got.HandOver[0] != "olm" {
		t.Errorf("operator: %+v", got)
	}
}
