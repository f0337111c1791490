package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/annex-platform/annex/internal/testenv"
)

// TestStorage runs what a package with state needs on the workloads
// cluster: a StatefulSet's volumeClaimTemplate gets a Bound claim (of the
// default class "standard") and its pod Running; a standalone claim of
// class "" binds and a Pod mounting it runs; growing a claim's request
// reaches its status.capacity; deleting a claim deletes its volume. The
// binder logs one line for each.
func TestStorage(t *testing.T) {
	binDir := testenv.RequireWorkloadsBinDir(t)
	ctx := context.Background()
	var progress bytes.Buffer
	dir := t.TempDir()
	c := startCluster(t, Options{Dir: dir, BinDir: binDir, Workloads: true, Nodes: 1, Log: &progress})
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := cs.StorageV1().StorageClasses().Get(ctx, StorageClassName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Annotations[annDefaultClass] != "true" || sc.Provisioner != StorageProvisioner || !ptr.Deref(sc.AllowVolumeExpansion, false) {
		t.Errorf("StorageClass %s: annotations %v, provisioner %s, allowVolumeExpansion %v; want the default class of %s with expansion",
			sc.Name, sc.Annotations, sc.Provisioner, ptr.Deref(sc.AllowVolumeExpansion, false), StorageProvisioner)
	}
	ns := "storage"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A StatefulSet whose claim names no class.
	labels := map[string]string{"app": "db"}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(int32(1)),
			ServiceName: "db",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "db", Image: "registry.k8s.io/pause:3.10",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec:       claimSpec(nil, "1Gi"),
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A claim of class "" and a Pod that mounts it.
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "scratch"},
		Spec:       claimSpec(ptr.To(""), "512Mi"),
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "user"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "user", Image: "registry.k8s.io/pause:3.10",
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}},
			}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "scratch"},
			}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	data := waitBound(t, cs, ns, "data-db-0")
	if got := ptr.Deref(data.Spec.StorageClassName, "<nil>"); got != StorageClassName {
		t.Errorf("claim data-db-0 has class %s, want the default %s", got, StorageClassName)
	}
	scratch := waitBound(t, cs, ns, "scratch")
	if got := ptr.Deref(scratch.Spec.StorageClassName, "<nil>"); got != "" {
		t.Errorf("claim scratch has class %q, want \"\"", got)
	}
	for _, claim := range []*corev1.PersistentVolumeClaim{data, scratch} {
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(dir, volumesDir, string(claim.UID))
		if pv.Labels[VolumeLabel] != "true" || pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != want ||
			pv.Spec.StorageClassName != ptr.Deref(claim.Spec.StorageClassName, "") ||
			pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
			t.Errorf("volume %s of claim %s: labels %v, class %q, reclaim %s, hostPath %+v; want label %s, the claim's class, Delete, path %s",
				pv.Name, claim.Name, pv.Labels, pv.Spec.StorageClassName, pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.HostPath, VolumeLabel, want)
		}
	}
	waitPodRunning(t, cs, ns, "db-0")
	waitPodRunning(t, cs, ns, "user")

	// Growing the StatefulSet's claim, which its class allows.
	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"3Gi"}}}}`)
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "data-db-0", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		got, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-0", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if size := got.Status.Capacity[corev1.ResourceStorage]; size.Cmp(resource.MustParse("3Gi")) != 0 {
			return fmt.Errorf("claim data-db-0 has status.capacity %s, want 3Gi", size.String())
		}
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, got.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if size := pv.Spec.Capacity[corev1.ResourceStorage]; size.Cmp(resource.MustParse("3Gi")) != 0 {
			return fmt.Errorf("volume %s has capacity %s, want 3Gi", pv.Name, size.String())
		}
		if got.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("claim data-db-0 is %s after growing", got.Status.Phase)
		}
		return nil
	})

	// Deleting the claim (after the Pod that uses it: until then the claim
	// is protected) deletes its volume.
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "user", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "scratch", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, func() error {
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, scratch.Spec.VolumeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("volume %s of the deleted claim scratch is still there (%s)", pv.Name, pv.Status.Phase)
	})

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	log := progress.String()
	for _, want := range []string{
		"storage: claim storage/data-db-0 bound to new volume " + data.Spec.VolumeName + " (1Gi, class \"standard\")",
		"storage: claim storage/scratch bound to new volume " + scratch.Spec.VolumeName + " (512Mi, class \"\")",
		"storage: claim storage/data-db-0 expanded from 1Gi to 3Gi",
		"storage: volume " + scratch.Spec.VolumeName + " deleted",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log has no line %q", want)
		}
	}
	t.Logf("progress:\n%s", log)
}

func claimSpec(class *string, size string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		StorageClassName: class,
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
		},
	}
}

func waitBound(t *testing.T, cs kubernetes.Interface, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	var claim *corev1.PersistentVolumeClaim
	eventually(t, time.Minute, func() error {
		got, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("claim %s/%s is %s", ns, name, got.Status.Phase)
		}
		claim = got
		return nil
	})
	return claim
}

func waitPodRunning(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	eventually(t, time.Minute, func() error {
		pod, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pod.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod %s/%s is %s on node %q", ns, name, pod.Status.Phase, pod.Spec.NodeName)
		}
		return nil
	})
}
