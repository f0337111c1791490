package cli

import (
	"bytes"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// annexctl resolve lists the changes a gate holds, with their permission diff.
func TestPrintHeld(t *testing.T) {
	held := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "hello"},
		Status: v1alpha1.ExtensionInstallationStatus{
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonApprovalRequired}},
			Change: &v1alpha1.PendingChange{
				Event: "PreUpgrade", FromVersion: "0.1.0", ToVersion: "0.2.0", Digest: "sha256:1",
				PermissionsGrow:   []string{"create, get on secrets cluster-wide"},
				PermissionsShrink: []string{"bound to ClusterRole/cluster-admin cluster-wide"},
			},
		},
	}
	settled := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"}}
	var out bytes.Buffer
	printHeld(&out, []*v1alpha1.ExtensionInstallation{settled, held})
	want := `
Held at a gate:
  default/hello: hello 0.1.0 → 0.2.0 (PreUpgrade) — ApprovalRequired
    grows:   create, get on secrets cluster-wide
    shrinks: bound to ClusterRole/cluster-admin cluster-wide
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	printHeld(&out, []*v1alpha1.ExtensionInstallation{settled})
	if out.Len() != 0 {
		t.Errorf("nothing held, but printed %q", out.String())
	}
}
