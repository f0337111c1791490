package localcluster

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/annex-platform/annex/internal/testenv"
)

// TestWorkloadsRun starts a cluster with workloads, as annex dev does: a
// Deployment of 2 replicas becomes Available on the fake nodes, a Job
// completes, a Service gets a ClusterIP, and a deleted namespace with
// objects in it goes away (the namespace controller finalizes it) instead
// of staying Terminating. Stop leaves no process behind.
func TestWorkloadsRun(t *testing.T) {
	binDir := testenv.RequireWorkloadsBinDir(t)
	ctx := context.Background()
	c := startCluster(t, Options{Dir: t.TempDir(), BinDir: binDir, Workloads: true, Nodes: 2})
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns := "workloads"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: pod},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobPod := pod
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

	eventually(t, time.Minute, func() error {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 2 {
			return fmt.Errorf("Deployment web: %d of 2 replicas available", d.Status.AvailableReplicas)
		}
		return nil
	})
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

func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	testenv.Eventually(t, timeout, f)
}
