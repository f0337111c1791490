package uninstall

import (
	"errors"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
)

func TestUnreachable(t *testing.T) {
	inst := &v1alpha1.ExtensionInstallation{}
	inst.Spec.Cluster = "edge-1"
	inst.Status.Inventory = make([]v1alpha1.ObjectReference, 3)
	want := news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonUninstallFailed, Message: "spec.cluster: cannot reach cluster edge-1 to remove 3 objects: " +
		"connection refused; the installation is kept until they are removed: check the ManagedCluster and its kubeconfig Secret"}
	if got := Unreachable(inst, errors.New("connection refused")); *got != want {
		t.Fatalf("Unreachable = %+v\nwant %+v", got, want)
	}
}
