package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
)

// TestDevFleet is the README's fleet walkthrough: `annex dev --clusters 2`
// starts two managed clusters at two Kubernetes versions, the demo profile
// gives both the extension hello — 0.2.0 where Kubernetes is 1.37, 0.1.0
// where it is 1.36 — with its greeter's replicas running, and deleting the
// profile uninstalls it everywhere.
func TestDevFleet(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	testenv.RequireWorkloadsBinDirAt(t, filepath.Join(filepath.Dir(testenv.RequireWorkloadsBinDir(t)), mustPreviousVersion(t)))
	dev, _, exited, stateDir := startDev(t, 3*time.Minute, "--clusters", "2", "--nodes", "1")
	c := clientFromKubeconfig(t, filepath.Join(stateDir, "kubeconfig"))
	ctx := context.Background()
	for _, obj := range readManifests(t, filepath.Join(root, "config/samples/profile.yaml")) {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for name, version := range map[string]string{"hello-cluster-1": "0.2.0", "hello-cluster-2": "0.1.0"} {
		waitFor(t, 2*time.Minute, exited, func() error {
			inst := &v1alpha1.ExtensionInstallation{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "annex-system", Name: name}, inst); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionReady) || inst.Status.InstalledVersion != version {
				return fmt.Errorf("%s: want %s Ready, have %q %+v", name, version, inst.Status.InstalledVersion, inst.Status.Conditions)
			}
			return nil
		})
	}
	// The greeter runs its replicas on the managed cluster's fake node.
	remote := clientFromKubeconfig(t, filepath.Join(stateDir, "clusters", "cluster-2", "kubeconfig"))
	deploy := &appsv1.Deployment{}
	if err := remote.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "hello-cluster-2"}, deploy); err != nil || deploy.Status.AvailableReplicas != 2 {
		t.Fatalf("hello's greeter on cluster-2: %d replicas available (err=%v), want 2", deploy.Status.AvailableReplicas, err)
	}

	profile := &v1alpha1.ExtensionProfile{}
	profile.Name = "demo"
	if err := c.Delete(ctx, profile); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, exited, func() error {
		var list v1alpha1.ExtensionInstallationList
		if err := c.List(ctx, &list, client.InNamespace("annex-system")); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d installations left", len(list.Items))
		}
		return nil
	})

	children := childPIDs(dev.Process.Pid)
	if err := dev.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("annex dev exited with %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("annex dev did not stop within 90s of SIGTERM")
	}
	for _, pid := range children {
		if alive(pid) {
			t.Errorf("child process %d outlived annex dev", pid)
		}
	}
}

func mustPreviousVersion(t *testing.T) string {
	t.Helper()
	v, err := testenv.PreviousKubeVersion()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
