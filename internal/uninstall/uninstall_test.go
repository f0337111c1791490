package uninstall

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/readiness"
	"github.com/annex-platform/annex/internal/target"
)

func TestHoldNamespace(t *testing.T) {
	ns := v1alpha1.ObjectReference{Version: "v1", Kind: "Namespace", Name: "apps"}
	other := v1alpha1.ObjectReference{Version: "v1", Kind: "Namespace", Name: "other"}
	cm := v1alpha1.ObjectReference{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "apps"}
	for _, tc := range []struct {
		name       string
		inventory  []v1alpha1.ObjectReference
		rest, held []v1alpha1.ObjectReference
	}{
		// The target namespace is held; everything else goes first.
		{"target namespace", []v1alpha1.ObjectReference{ns, cm}, []v1alpha1.ObjectReference{cm}, []v1alpha1.ObjectReference{ns}},
		// Another namespace, or an object named like it, is not held.
		{"others", []v1alpha1.ObjectReference{other, cm}, []v1alpha1.ObjectReference{other, cm}, nil},
	} {
		rest, held := HoldNamespace(tc.inventory, "apps")
		if !slices.Equal(rest, tc.rest) || !slices.Equal(held, tc.held) {
			t.Errorf("%s: HoldNamespace = %v, %v; want %v, %v", tc.name, rest, held, tc.rest, tc.held)
		}
	}
}

func TestHasPostDeleteHooks(t *testing.T) {
	hook := func(events string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetAnnotations(map[string]string{"helm.sh/hook": events})
		return o
	}
	for _, tc := range []struct {
		events string
		want   bool
	}{
		{"post-delete", true},
		// One of several events, spaces allowed.
		{"pre-delete, post-delete", true},
		{"pre-delete", false},
		{"", false},
	} {
		if got := HasPostDeleteHooks(target.Set{Objects: []*unstructured.Unstructured{hook(tc.events)}}); got != tc.want {
			t.Errorf("HasPostDeleteHooks(%q) = %v, want %v", tc.events, got, tc.want)
		}
	}
}

func TestStartedTimeoutLingering(t *testing.T) {
	inst := &v1alpha1.ExtensionInstallation{}
	if Started(inst) {
		t.Fatal("Started without an Installed condition")
	}
	inst.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionInstalled, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUninstalling}}
	if !Started(inst) {
		t.Fatal("not Started with Installed=False Uninstalling")
	}
	if got := Timeout(inst); got != readiness.DefaultTimeout {
		t.Fatalf("Timeout unset = %s, want the default", got)
	}
	inst.Spec.Uninstall.Timeout = metav1.Duration{Duration: time.Minute}
	if got := Timeout(inst); got != time.Minute {
		t.Fatalf("Timeout = %s, want spec.uninstall.timeout", got)
	}
	cr := v1alpha1.ObjectReference{Group: "example.com", Version: "v1", Kind: "Widget", Namespace: "apps", Name: "w"}
	h := target.Health{NotReady: []target.ObjectHealth{
		{Object: cr, Status: "Terminating", Message: "finalizers: example.com/cleanup"},
		{Object: v1alpha1.ObjectReference{Version: "v1", Kind: "Namespace", Name: "apps"}, Status: "NotFound"},
	}}
	refs, named := Lingering(h)
	if !slices.Equal(refs, []v1alpha1.ObjectReference{cr}) || !slices.Equal(named, []string{"Widget apps/w: finalizers: example.com/cleanup"}) {
		t.Fatalf("Lingering = %v, %v", refs, named)
	}
	if !HooksRan(h) || HooksRan(target.Health{}) {
		t.Fatal("HooksRan: a namespace gone or being deleted says the post-delete hooks ran; none read says nothing")
	}
}

// Past its timeout an uninstall keeps waiting while nothing lingers;
// otherwise it names what holds it and either removes their finalizers
// (spec.uninstall.onTimeout RemoveFinalizers) or stalls.
func TestAfterTimeout(t *testing.T) {
	inst := &v1alpha1.ExtensionInstallation{}
	inst.Spec.Extension = "widgets"
	cr := v1alpha1.ObjectReference{Group: "example.com", Version: "v1", Kind: "Widget", Namespace: "apps", Name: "w"}
	h := target.Health{NotReady: []target.ObjectHealth{{Object: cr, Status: "Terminating", Message: "finalizers: example.com/cleanup"}}}
	if got := AfterTimeout(inst, target.Health{}, time.Minute); len(got.Lingering) != 0 || got.RemoveFinalizers {
		t.Errorf("nothing lingers: %+v", got)
	}
	got := AfterTimeout(inst, h, time.Minute)
	if got.RemoveFinalizers || !slices.Equal(got.Lingering, []v1alpha1.ObjectReference{cr}) ||
		!strings.HasPrefix(got.Message, "deletion has waited more than spec.uninstall.timeout (1m0s) for Widget apps/w: finalizers: example.com/cleanup;") {
		t.Errorf("stalled: %+v", got)
	}
	inst.Spec.Uninstall.OnTimeout = v1alpha1.UninstallRemoveFinalizers
	got = AfterTimeout(inst, h, time.Minute)
	if !got.RemoveFinalizers || !strings.HasPrefix(got.Message, "removed the finalizers of Widget apps/w: finalizers: example.com/cleanup after spec.uninstall.timeout (1m0s)") {
		t.Errorf("remove finalizers: %+v", got)
	}
	if msg := HeldMessage(inst, []string{"apps/a", "apps/b"}); msg != "deletion held: widgets still needed by apps/a, apps/b; delete those first, or together with this one (dependents are uninstalled first)" {
		t.Errorf("HeldMessage = %q", msg)
	}
}
