package preflight

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestCheck(t *testing.T) {
	src := v1alpha1.ArtifactSource{URL: "https://charts.example.com/flow.tgz"}
	exts := []v1alpha1.Extension{{ObjectMeta: metav1.ObjectMeta{Name: "flow"}, Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
		{Version: "2.0.0", KubeVersion: ">=1.32.0-0", Source: src},
		{Version: "1.0.0", KubeVersion: ">=1.30.0-0 <1.32.0-0", Source: src},
	}}}}
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "flow"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "flow", Version: "1.x"},
		Status: v1alpha1.ExtensionInstallationStatus{InstalledVersion: "1.0.0", Inventory: []v1alpha1.ObjectReference{
			{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta3", Kind: "FlowSchema", Name: "exempt"},
			{Version: "v1", Kind: "ConfigMap", Namespace: "ops", Name: "flow"},
		}},
	}
	// Within the range: nothing in the way.
	ok, err := Check("1.31.4", exts, []*v1alpha1.ExtensionInstallation{inst})
	if err != nil || !ok.OK() || !strings.HasPrefix(ok.Summary(), "every installation has a version for Kubernetes 1.31.4") {
		t.Fatalf("1.31.4: OK %v, %q (%v)", ok.OK(), ok.Summary(), err)
	}
	// 1.32: no 1.x fits, and the FlowSchema's API version is gone.
	bad, err := Check("1.32.0", exts, []*v1alpha1.ExtensionInstallation{inst})
	if err != nil || bad.OK() {
		t.Fatalf("1.32.0: OK %v (%v)", bad.OK(), err)
	}
	if len(bad.Removed) != 1 || bad.Removed[0].Object.Kind != "FlowSchema" || bad.Removed[0].Removal.RemovedIn != "1.32" {
		t.Fatalf("removed %+v, want the FlowSchema only", bad.Removed)
	}
	for _, want := range []string{
		"not ready for Kubernetes 1.32.0",
		"ops/flow wants flow 1.x",
		"ops/flow has FlowSchema exempt of flowcontrol.apiserver.k8s.io/v1beta3, which Kubernetes 1.32 removed; use flowcontrol.apiserver.k8s.io/v1",
	} {
		if !strings.Contains(bad.Summary(), want) {
			t.Errorf("summary lacks %q:\n%s", want, bad.Summary())
		}
	}
	if _, err := Check("soon", exts, nil); err == nil {
		t.Error("a version that does not parse must be an error")
	}
}
