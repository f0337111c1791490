package cli

import (
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestApprovalRequestsOf(t *testing.T) {
	at := func(min int) metav1.Time { return metav1.NewTime(time.Date(2026, 1, 1, 0, min, 0, 0, time.UTC)) }
	inst := func(ns, name, cluster string, state v1alpha1.ApprovalState, since metav1.Time) v1alpha1.ExtensionInstallation {
		in := v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "app", Cluster: cluster},
			Status: v1alpha1.ExtensionInstallationStatus{Conditions: []metav1.Condition{{
				Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonApprovalRequired, LastTransitionTime: since}}},
		}
		if state != "" {
			in.Status.Change = &v1alpha1.PendingChange{Event: "PreUpgrade", FromVersion: "1.0.0", ToVersion: "2.0.0", Digest: "sha256:" + name,
				PermissionsGrow: []string{"create on secrets cluster-wide"}, ArtifactDigest: "sha256:art", SignedBy: `key "release" (sha256:ab…) (Cosign)`,
				Approval: &v1alpha1.ChangeApproval{State: state, Reasons: []string{"Major: 1.0.0 → 2.0.0"}, Policies: []string{"p"}, RequestedBy: "alice"}}
		}
		return in
	}
	got := ApprovalRequestsOf([]v1alpha1.ExtensionInstallation{
		inst("b", "newer", "edge", v1alpha1.ApprovalPending, at(5)),
		// Approved already, or no approval needed: not listed.
		inst("a", "approved", "", v1alpha1.ApprovalApproved, at(1)),
		inst("a", "ungated", "", "", at(1)),
		// The oldest waits longest and comes first; the hub is named.
		inst("a", "older", "", v1alpha1.ApprovalPending, at(2)),
	})
	var names []string
	for _, r := range got {
		names = append(names, r.Namespace+"/"+r.Name+"@"+r.Cluster)
	}
	if want := []string{"a/older@" + HubCluster, "b/newer@edge"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("got %v, want %v", names, want)
	}
	r := got[0]
	if r.Digest != "sha256:older" || r.RequestedBy != "alice" || !reflect.DeepEqual(r.PermissionsGrow, []string{"create on secrets cluster-wide"}) ||
		!reflect.DeepEqual(r.Reasons, []string{"Major: 1.0.0 → 2.0.0"}) || !r.Since.Equal(at(2).Time) ||
		r.ArtifactDigest != "sha256:art" || r.SignedBy != `key "release" (sha256:ab…) (Cosign)` {
		t.Errorf("request %+v", r)
	}
}

func TestDetailOfInstallation(t *testing.T) {
	in := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 3,
			Annotations: map[string]string{v1alpha1.AnnotationRequestedBy: "alice"}},
		Spec: v1alpha1.ExtensionInstallationSpec{Extension: "app", Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}},
		Status: v1alpha1.ExtensionInstallationStatus{
			Inventory: []v1alpha1.ObjectReference{{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "web"}},
			// A failed target of an older generation is history, not shown.
			FailedTarget: &v1alpha1.FailedTarget{Generation: 2, Version: "1.0.0", Message: "old"},
		},
	}
	tree := BuildStatus(nil, []v1alpha1.ExtensionInstallation{*in}, nil, StatusFilter{})
	d := DetailOfInstallation(in, tree)
	if d.Status.Name != "web" || d.Cluster != HubCluster || d.RequestedBy != "alice" || d.Values != "replicas: 2\n" || d.FailedTarget != nil {
		t.Errorf("detail %+v", d)
	}
	if want := []ObjectHealth{{Ref: in.Status.Inventory[0]}}; !reflect.DeepEqual(d.Inventory, want) {
		t.Errorf("inventory %+v, want %+v (health not read yet)", d.Inventory, want)
	}
	in.Status.FailedTarget.Generation = 3
	if d := DetailOfInstallation(in, tree); d.FailedTarget == nil {
		t.Error("a failed target of the current generation is not shown")
	}
}

func TestMarkSigned(t *testing.T) {
	ext := &v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
		{Version: "2.0.0", Source: v1alpha1.ArtifactSource{URL: "oci://r/app@sha256:2"}},
		{Version: "1.0.0", Source: v1alpha1.ArtifactSource{URL: "oci://r/app@sha256:1"}},
	}}}
	artifact := func(ext, version, url string, verified bool) v1alpha1.ExtensionInstallation {
		return v1alpha1.ExtensionInstallation{Spec: v1alpha1.ExtensionInstallationSpec{Extension: ext}, Status: v1alpha1.ExtensionInstallationStatus{
			Artifact: &v1alpha1.ArtifactStatus{Version: version, URL: url, Verification: &v1alpha1.ArtifactVerification{
				Provider: v1alpha1.VerificationCosign, Verified: verified, Identity: `key "release"`}}}}
	}
	d := DetailOf(ext)
	MarkSigned(d, ext, []v1alpha1.ExtensionInstallation{
		artifact("app", "1.0.0", "oci://r/app@sha256:1", true),
		// Not verified, another extension, or another artifact of the same version: no mark.
		artifact("app", "2.0.0", "oci://r/app@sha256:2", false),
		artifact("other", "2.0.0", "oci://r/app@sha256:2", true),
		artifact("app", "2.0.0", "oci://r/app@sha256:old", true),
	})
	if d.Versions[0].SignedBy != "" || d.Versions[1].SignedBy != `key "release" (Cosign)` {
		t.Fatalf("marks %q, %q", d.Versions[0].SignedBy, d.Versions[1].SignedBy)
	}
	var b strings.Builder
	if err := WriteExtension(&b, OutputTable, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "1.0.0 ✓signed") || !strings.Contains(b.String(), `1.0.0 signed by key "release" (Cosign)`) || strings.Contains(b.String(), "2.0.0 ✓") {
		t.Errorf("show prints:\n%s", b.String())
	}
}
