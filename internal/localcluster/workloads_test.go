package localcluster

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/annex-platform/annex/internal/testenv"
)

// TestWorkloadsRun starts a cluster with workloads, as annex dev does: its
// nodes carry the labels, node info and allocatable a kubelet registers; a
// Deployment of 2 replicas that selects Linux nodes becomes Available on
// the fake nodes, one of 3 replicas spread over zones too, with one Pod
// in each zone; a Job that selects Linux nodes completes, a Service gets a
// ClusterIP, and a deleted namespace with objects in it goes away (the
// namespace controller finalizes it) instead of staying Terminating. Stop
// leaves no process behind.
func TestWorkloadsRun(t *testing.T) {
	binDir := testenv.RequireWorkloadsBinDir(t)
	ctx := context.Background()
	c := startCluster(t, Options{Dir: t.TempDir(), BinDir: binDir, Workloads: true,
		NodeAllocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")}})
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	expectNodesLikeKubelets(t, cs, 3, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("128Gi"), corev1.ResourcePods: resource.MustParse("250"),
	})
	ns := "workloads"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			// What many charts select by default.
			NodeSelector: map[string]string{corev1.LabelOSStable: "linux"},
			Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}}}},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: pod},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	spreadLabels := map[string]string{"app": "spread"}
	spread := pod.DeepCopy()
	spread.Labels = spreadLabels
	spread.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: spreadLabels},
	}}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "spread"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: spreadLabels}, Template: *spread},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobPod := *pod.DeepCopy()
	jobPod.Spec.RestartPolicy = corev1.RestartPolicyNever
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "once"},
		Spec:       batchv1.JobSpec{Template: jobPod},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP == "" {
		t.Error("the Service got no ClusterIP")
	}

	for name, replicas := range map[string]int32{"web": 2, "spread": 3} {
		eventually(t, time.Minute, func() error {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Status.AvailableReplicas != replicas {
				return fmt.Errorf("Deployment %s: %d of %d replicas available", name, d.Status.AvailableReplicas, replicas)
			}
			return nil
		})
	}
	expectOnePodPerZone(t, cs, ns, "app=spread")
	eventually(t, time.Minute, func() error {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if j.Status.Succeeded != 1 {
			return fmt.Errorf("Job once: %d succeeded", j.Status.Succeeded)
		}
		return nil
	})

	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, func() error {
		got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("namespace %s is still %s", ns, got.Status.Phase)
	})

	pids := c.pids()
	if len(pids) != 5 {
		t.Fatalf("want 5 processes (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok), have %v", pids)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("process %d outlived Stop", pid)
		}
	}
}

// expectNodesLikeKubelets checks that the cluster has n nodes, each
// registered as a kubelet on this machine would register it, offering
// allocatable, spread over the zones of one region.
func expectNodesLikeKubelets(t *testing.T, cs kubernetes.Interface, n int, allocatable corev1.ResourceList) {
	t.Helper()
	ctx := context.Background()
	version, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != n {
		t.Fatalf("%d nodes, want %d", len(nodes.Items), n)
	}
	zonesSeen := map[string]bool{}
	for _, node := range nodes.Items {
		want := map[string]string{
			corev1.LabelOSStable: "linux", corev1.LabelArchStable: runtime.GOARCH,
			"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": runtime.GOARCH,
			corev1.LabelHostname: node.Name, corev1.LabelInstanceTypeStable: "annex-fake",
			corev1.LabelTopologyRegion: "local", "type": "kwok",
		}
		for k, v := range want {
			if got := node.Labels[k]; got != v {
				t.Errorf("node %s: label %s=%q, want %q", node.Name, k, got, v)
			}
		}
		zonesSeen[node.Labels[corev1.LabelTopologyZone]] = true
		for name, q := range allocatable {
			if got := node.Status.Allocatable[name]; got.Cmp(q) != 0 {
				t.Errorf("node %s: allocatable %s = %s, want %s", node.Name, name, got.String(), q.String())
			}
		}
		info := node.Status.NodeInfo
		if info.OperatingSystem != "linux" || info.Architecture != runtime.GOARCH || info.KubeletVersion != version.GitVersion {
			t.Errorf("node %s: nodeInfo os %q, arch %q, kubelet %q; want linux, %s, %s",
				node.Name, info.OperatingSystem, info.Architecture, info.KubeletVersion, runtime.GOARCH, version.GitVersion)
		}
	}
	if !maps.Equal(zonesSeen, map[string]bool{"local-a": true, "local-b": true, "local-c": true}) {
		t.Errorf("the nodes are in zones %v, want local-a, local-b and local-c", zonesSeen)
	}
}

// expectOnePodPerZone checks that the Pods selector selects in ns run in
// distinct zones.
func expectOnePodPerZone(t *testing.T, cs kubernetes.Interface, ns, selector string) {
	t.Helper()
	ctx := context.Background()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]string{}
	for _, p := range pods.Items {
		node, err := cs.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the node of Pod %s: %v", p.Name, err)
		}
		zone := node.Labels[corev1.LabelTopologyZone]
		if other, ok := zones[zone]; ok {
			t.Errorf("Pods %s and %s are both in zone %q", other, p.Name, zone)
		}
		zones[zone] = p.Name
	}
}

func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	testenv.Eventually(t, timeout, f)
}
