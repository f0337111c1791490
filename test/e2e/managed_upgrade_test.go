package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/localcluster"
	"github.com/annex-platform/annex/internal/manager"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// TestManagedClusterUpgradeAndDowngrade upgrades a managed cluster's
// kube-apiserver from 1.36 to 1.37 on the same etcd data and back again.
// Two extensions offer 1.0.0 (any Kubernetes since 1.30) and 2.0.0 (1.37
// and later): both move up with the cluster; on the way back the one whose
// installation allows downgrades moves down, the other keeps 2.0.0 running
// and says why and what to do.
func TestManagedClusterUpgradeAndDowngrade(t *testing.T) {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	oldBin, newBin := testenv.RequirePreviousBinDir(t), testenv.RequireBinDir(t)
	oldVersion, _ := testenv.PreviousKubeVersion()
	newVersion, _ := testenv.KubeVersion()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	hub := testenv.Start(t)
	edge, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), BinDir: oldBin, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = edge.Stop() })
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := edge.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata: {version: {{ .Chart.Version | quote }}}\n"
	var charts []helmrepo.Chart
	for _, name := range []string{"kv", "kw"} {
		charts = append(charts,
			helmrepo.Chart{Name: name, Version: "1.0.0", KubeVersion: ">=1.30.0-0", Files: map[string]string{"templates/cm.yaml": cm}},
			helmrepo.Chart{Name: name, Version: "2.0.0", KubeVersion: ">=1.37.0-0", Files: map[string]string{"templates/cm.yaml": cm}})
	}
	repo := helmrepo.NewServer(t, charts...)
	c := hub.Client
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "edge"}, Data: map[string][]byte{"kubeconfig": kubeconfig}},
		&v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge"}, Spec: v1alpha1.ManagedClusterSpec{
			KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: "default", Name: "edge", Key: "kubeconfig"}}},
		&v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "charts"}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}},
		&v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kv"},
			Spec: v1alpha1.ExtensionInstallationSpec{Extension: "kv", Cluster: "edge", Upgrade: v1alpha1.UpgradePolicy{AllowDowngrade: true}}},
		&v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kw"},
			Spec: v1alpha1.ExtensionInstallationSpec{Extension: "kw", Cluster: "edge"}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	mgr, err := manager.New(hub.Config, manager.Options{MetricsAddr: "0", HealthPollInterval: 200 * time.Millisecond, ClusterVersionInterval: time.Second, CacheDir: t.TempDir(), SeveralPerProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	await := func(name, version, clusterVersion, reason string) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			got := &v1alpha1.ExtensionInstallation{}
			err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, got)
			ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
			ok := err == nil && ready != nil && got.Status.InstalledVersion == version && got.Status.ClusterVersion == clusterVersion
			if ok && reason == "" && ready.Status == metav1.ConditionTrue {
				return
			}
			if ok && reason != "" && ready.Reason == reason && strings.Contains(ready.Message, "keeps running") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: want %s on Kubernetes %s (reason %q); got %q on %q, Ready %+v (err=%v)",
					name, version, clusterVersion, reason, got.Status.InstalledVersion, got.Status.ClusterVersion, ready, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	restart := func(bin string) {
		t.Helper()
		if err := edge.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		if err := edge.StartAPIServer(ctx, bin); err != nil {
			t.Fatal(err)
		}
	}
	configMapVersion := func(name string) string {
		remote, err := client.New(edge.RESTConfig(), client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := &corev1.ConfigMap{}
		if err := remote.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, got); err != nil {
			return fmt.Sprint(err)
		}
		return got.Data["version"]
	}

	await("kv", "1.0.0", "v"+oldVersion, "")
	await("kw", "1.0.0", "v"+oldVersion, "")
	restart(newBin)
	await("kv", "2.0.0", "v"+newVersion, "")
	await("kw", "2.0.0", "v"+newVersion, "")
	restart(oldBin)
	await("kv", "1.0.0", "v"+oldVersion, "")
	await("kw", "2.0.0", "v"+oldVersion, v1alpha1.ReasonNoMatchingVersion)
	if v := configMapVersion("kv"); v != "1.0.0" {
		t.Fatalf("kv's ConfigMap on the cluster says %s, want 1.0.0 after the downgrade", v)
	}
	if v := configMapVersion("kw"); v != "2.0.0" {
		t.Fatalf("kw's ConfigMap on the cluster says %s, want 2.0.0 kept running", v)
	}
}
