package localcluster

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/annex-platform/annex/internal/testenv"
)

// TestClusterKeepsDataAcrossRestarts runs one cluster through the life of a
// dev cluster: start, write, restart the API server, stop, start again.
func TestClusterKeepsDataAcrossRestarts(t *testing.T) {
	binDir := testenv.RequireBinDir(t)
	ctx := context.Background()
	var progress bytes.Buffer
	opts := Options{Dir: t.TempDir(), BinDir: binDir, Log: &progress}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")

	c := startCluster(t, opts)
	if err := c.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	cs := kubeconfigClient(t, kubeconfig)
	admin, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"},
		Data:       map[string]string{"key": "value"},
	}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ConfigMap with RESTConfig: %v", err)
	}
	expectConfigMap(t, cs, "through the written kubeconfig")

	// An API server upgrade: a new kube-apiserver on the same etcd.
	etcdPID := c.etcd.cmd.Process.Pid
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := c.StartAPIServer(ctx, binDir); err != nil {
		t.Fatal(err)
	}
	if got := c.etcd.cmd.Process.Pid; got != etcdPID {
		t.Errorf("etcd was restarted with the API server (pid %d, then %d)", etcdPID, got)
	}
	expectConfigMap(t, cs, "after the API server restarted")

	pids := c.pids()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after Stop (kill -0: %v)", pid, err)
		}
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	// A second start on the same Dir keeps port and credentials, so the
	// kubeconfig written by the first still works, and finds the data.
	startCluster(t, opts)
	expectConfigMap(t, cs, "after the whole cluster restarted")
	t.Logf("progress:\n%s", progress.String())
}

// startCluster starts a cluster and stops it when the test ends.
func startCluster(t *testing.T, o Options) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return c
}

func kubeconfigClient(t *testing.T, path string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", path, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func expectConfigMap(t *testing.T, cs *kubernetes.Clientset, when string) {
	t.Helper()
	got, err := cs.CoreV1().ConfigMaps("default").Get(context.Background(), "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap default/kept %s: %v", when, err)
	}
	if got.Data["key"] != "value" {
		t.Errorf("ConfigMap default/kept %s has data %v, want key=value", when, got.Data)
	}
}

func (c *Cluster) pids() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pids []int
	for _, p := range append([]*child{c.apiserver, c.etcd}, c.workloads...) {
		if p != nil {
			pids = append(pids, p.cmd.Process.Pid)
		}
	}
	return pids
}
