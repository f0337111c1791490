package readiness

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/target"
)

// status.resources from a health read: ready unless listed, not created
// yet while NotFound, not ready with the object's own message, and as it
// was when the read did not cover it.
func TestResources(t *testing.T) {
	ref := func(name string) v1alpha1.ObjectReference {
		return v1alpha1.ObjectReference{Group: "example.annex.dev", Version: "v1", Kind: "Banner", Namespace: "default", Name: name}
	}
	ready, missing, failing, unread := ref("ready"), ref("missing"), ref("failing"), ref("unread")
	h := target.Health{NotReady: []target.ObjectHealth{
		{Object: missing, Status: "NotFound", Message: "not found"},
		{Object: failing, Status: "Failed", Message: "Ready=False: bad color"},
	}}
	previous := []v1alpha1.ResourceStatus{{Kind: "Banner", Namespace: "default", Name: "unread", Ready: metav1.ConditionTrue}}
	got := Resources([]v1alpha1.ObjectReference{ready, missing, failing, unread}, previous, h, []v1alpha1.ObjectReference{ready, missing, failing})
	want := []struct {
		status  metav1.ConditionStatus
		message string
	}{
		{metav1.ConditionTrue, ""},
		{metav1.ConditionUnknown, "not found"},
		{metav1.ConditionFalse, "Ready=False: bad color"},
		{metav1.ConditionTrue, ""}, // kept from previous
	}
	if len(got) != len(want) {
		t.Fatalf("got %d statuses, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Ready != w.status || got[i].Message != w.message {
			t.Errorf("%s: got %s %q, want %s %q", got[i].Name, got[i].Ready, got[i].Message, w.status, w.message)
		}
	}
	if got[0].APIVersion != "example.annex.dev/v1" {
		t.Errorf("APIVersion = %q", got[0].APIVersion)
	}
	// A resource neither covered nor known before waits for its operator.
	if got := Resources([]v1alpha1.ObjectReference{unread}, nil, target.Health{}, nil); got[0].Ready != metav1.ConditionUnknown ||
		got[0].Message != "not created yet: it is created once the operator is up" {
		t.Errorf("uncovered, unknown: %+v", got[0])
	}
	if Resources(nil, previous, h, nil) != nil {
		t.Error("no spec.resources, yet statuses")
	}
}
