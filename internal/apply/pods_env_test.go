package apply

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// createStuckPod stands in for a workload's controller and for the
// scheduler or kubelet, which the test API server does not run: it creates
// the Pod ns/name with labels and writes status through the status
// subresource, as they would.
func createStuckPod(ctx context.Context, t *testing.T, a *Applier, ns, name string, labels map[string]string, status corev1.PodStatus) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "run", Image: "registry.example/nope:1"}}},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		t.Error(err)
		return
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("v1")
	u.SetKind("Pod")
	delete(u.Object, "status")
	if err := a.Client.Create(ctx, u); err != nil {
		t.Errorf("create Pod %s/%s: %v", ns, name, err)
		return
	}
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		t.Error(err)
		return
	}
	u.Object["status"] = st
	if err := a.Client.Status().Update(ctx, u); err != nil {
		t.Errorf("write the status of Pod %s/%s: %v", ns, name, err)
	}
}

// createDefaultServiceAccount creates the ServiceAccount Pods of ns run
// as, which no controller creates in the test API server.
func createDefaultServiceAccount(t *testing.T, a *Applier, ns string) {
	t.Helper()
	sa := mustObject(t, `{apiVersion: v1, kind: ServiceAccount, metadata: {name: default, namespace: `+ns+`}}`)
	if err := a.Client.Create(t.Context(), sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestHealthNamesStuckPod: a Deployment that is not Available because its
// Pod cannot be scheduled names that Pod and the scheduler's reason, the
// same on every read; so does a hook Job that times out while its Pod
// cannot pull its image.
func TestHealthNamesStuckPod(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "stuck-pods"
	createNamespace(t, a, ns)
	createDefaultServiceAccount(t, a, ns)
	owner := Owner{Name: "demo", Namespace: "team-a"}

	t.Run("unschedulable Deployment", func(t *testing.T) {
		inventory, err := a.Apply(ctx, owner, ns, Set{Objects: objects(t, deploymentDoc(ns, 1))})
		if err != nil {
			t.Fatal(err)
		}
		// Before any Pod exists the message is kstatus' own.
		h, err := a.Health(ctx, inventory)
		if err != nil {
			t.Fatal(err)
		}
		before := h.Summary()
		if strings.Contains(before, "Pod ") {
			t.Errorf("Summary names a Pod before any exists: %q", before)
		}
		createStuckPod(ctx, t, a, ns, "web-5d9c-x2v4q", map[string]string{"app": "web"}, corev1.PodStatus{
			Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: "Unschedulable", Message: unschedulableMessage, LastTransitionTime: metav1.Now()}},
		})
		// A healthy Pod of the same Deployment is not the one named.
		createStuckPod(ctx, t, a, ns, "web-5d9c-a0000", map[string]string{"app": "web"}, corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}},
		})
		h, err = a.Health(ctx, inventory)
		if err != nil {
			t.Fatal(err)
		}
		want := before + "; Pod stuck-pods/web-5d9c-x2v4q: cannot be scheduled (Unschedulable): " + unschedulableMessage
		if got := h.Summary(); got != want {
			t.Errorf("Summary =\n  %q\nwant\n  %q", got, want)
		}
		again, err := a.Health(ctx, inventory)
		if err != nil || again.Summary() != h.Summary() {
			t.Errorf("second Summary = %q (%v), want the same text", again.Summary(), err)
		}
	})

	t.Run("hook Job whose Pod cannot pull its image", func(t *testing.T) {
		set := Set{Objects: objects(t, hookJobDoc("setup", "post-install", ""))}
		done := make(chan struct{})
		go func() {
			defer close(done)
			job := waitForObject(ctx, t, a, ref("batch", "v1", "Job", ns, "setup"))
			if job == nil {
				return
			}
			// The Job's Pod carries the labels its selector selects, the
			// Job's UID among them.
			selector, _, _ := unstructured.NestedStringMap(job.Object, "spec", "selector", "matchLabels")
			createStuckPod(ctx, t, a, ns, "setup-7xk2p", selector, corev1.PodStatus{
				Phase: corev1.PodPending,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "run", Image: "registry.example/migrate:1.0",
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}},
			})
		}()
		_, err := a.ApplyWithHooks(ctx, owner, ns, set, HookOptions{HookTimeout: 3 * time.Second})
		<-done
		var hookErr *HookError
		if !errors.As(err, &hookErr) || !hookErr.TimedOut {
			t.Fatalf("ApplyWithHooks error = %v, want a timed-out *HookError", err)
		}
		want := `post-install hook Job stuck-pods/setup did not complete within 3s: ` +
			`Pod stuck-pods/setup-7xk2p: container "run" cannot pull image "registry.example/migrate:1.0" (ImagePullBackOff); change what keeps the Pod from running`
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error =\n  %s\nwant it to start with\n  %s", err, want)
		}
	})
}

// waitForObject waits until the object r exists and returns it; nil, with
// the test failed, when it never does.
func waitForObject(ctx context.Context, t *testing.T, a *Applier, ref v1alpha1.ObjectReference) *unstructured.Unstructured {
	t.Helper()
	var obj *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		obj, err = a.get(ctx, ref)
		return obj != nil, err
	})
	if err != nil {
		t.Errorf("%s was never created: %v", describe(ref), err)
		return nil
	}
	return obj
}
