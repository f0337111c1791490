package apply

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A workload that is not ready often waits for Pods that cannot start: the
// scheduler finds no node, the kubelet cannot pull an image, a container
// keeps crashing. The workload's own status says only "not available";
// the reason is on its Pods. These functions read the Pods of a workload
// that is not ready, and only then, and name the first one that is stuck
// and why.

// podListLimit bounds how many Pods of one workload are read.
const podListLimit = 20

// hasPods reports whether obj is a workload or a Job, whose spec.selector
// selects its Pods.
func hasPods(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	switch gvk.Group {
	case "apps":
		return gvk.Kind == "Deployment" || gvk.Kind == "StatefulSet" || gvk.Kind == "DaemonSet" || gvk.Kind == "ReplicaSet"
	case "batch":
		return gvk.Kind == "Job"
	}
	return false
}

// podProblemOf reads at most podListLimit Pods that obj's spec.selector
// selects in its namespace and returns stuckPod's account of them: ""
// when obj has no selector, none of them is stuck, or they cannot be read
// (the reason is a help, not a condition of the health it explains).
func (a *Applier) podProblemOf(ctx context.Context, obj *unstructured.Unstructured) string {
	raw, found, err := unstructured.NestedMap(obj.Object, "spec", "selector")
	if err != nil || !found {
		return ""
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return ""
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil || sel.Empty() {
		return ""
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("v1")
	list.SetKind("PodList")
	if err := a.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabelsSelector{Selector: sel}, client.Limit(podListLimit)); err != nil {
		return ""
	}
	pods := make([]corev1.Pod, 0, len(list.Items))
	for _, u := range list.Items {
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pod); err == nil {
			pods = append(pods, pod)
		}
	}
	return stuckPod(pods)
}

// stuckPod names the first of pods, by name, that podProblem finds stuck,
// e.g. `Pod demo/web-5d9c-x2v4q: cannot be scheduled (Unschedulable): 0/3
// nodes are available: ...`; "" when none is. The text changes only when
// the Pod or its state does: it carries no counts or times.
func stuckPod(pods []corev1.Pod) string {
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for i := range sorted {
		if problem := podProblem(&sorted[i]); problem != "" {
			return fmt.Sprintf("Pod %s/%s: %s", sorted[i].Namespace, sorted[i].Name, problem)
		}
	}
	return ""
}

// containerErrorReasons are the waiting reasons of a container that will
// not start without a change (besides image pulls and crash loops, which
// podProblem words on their own).
var containerErrorReasons = []string{
	"CreateContainerConfigError", "CreateContainerError", "InvalidImageName", "RunContainerError",
}

// podProblem says why pod is stuck, as the scheduler or the kubelet
// reported it, or "" when it is not (running, or on its way):
//
//   - not scheduled: PodScheduled=False with the scheduler's reason and
//     message (Unschedulable: "0/3 nodes are available: ...");
//   - an image that cannot be pulled (ErrImagePull or ImagePullBackOff,
//     between which the kubelet alternates; both are said as
//     ImagePullBackOff, so that the text stays the same);
//   - a container in CrashLoopBackOff, with how it last ended;
//   - a container that cannot be created (containerErrorReasons), with
//     the kubelet's message.
//
// Init containers are looked at before the others, as they run first.
func podProblem(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return ""
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
			return joinNonEmpty(": ", "cannot be scheduled ("+c.Reason+")", c.Message)
		}
	}
	statuses := append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if p := containerProblem(cs); p != "" {
			return p
		}
	}
	return ""
}

// containerProblem is podProblem for one container's status.
func containerProblem(cs corev1.ContainerStatus) string {
	w := cs.State.Waiting
	if w == nil {
		return ""
	}
	switch {
	case w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff":
		return fmt.Sprintf("container %q cannot pull image %q (ImagePullBackOff)", cs.Name, cs.Image)
	case w.Reason == "CrashLoopBackOff":
		// The message names the back-off delay, which grows at each
		// restart; how the container last ended does not.
		return joinNonEmpty(", ", fmt.Sprintf("container %q is crash-looping (CrashLoopBackOff)", cs.Name), lastExit(cs))
	case slices.Contains(containerErrorReasons, w.Reason):
		return joinNonEmpty(": ", fmt.Sprintf("container %q cannot start (%s)", cs.Name, w.Reason), w.Message)
	}
	return ""
}

// lastExit says how a container's last run ended, e.g. "last exit: Error,
// exit code 1"; "" when it is not known.
func lastExit(cs corev1.ContainerStatus) string {
	t := cs.LastTerminationState.Terminated
	if t == nil {
		return ""
	}
	how := fmt.Sprintf("exit code %d", t.ExitCode)
	if t.Reason != "" {
		how = t.Reason + ", " + how
	}
	return "last exit: " + how
}

// joinNonEmpty joins the parts that are not empty with sep.
func joinNonEmpty(sep string, parts ...string) string {
	return strings.Join(slices.DeleteFunc(slices.Clone(parts), func(s string) bool { return s == "" }), sep)
}
