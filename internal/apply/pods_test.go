package apply

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// unschedulableMessage is what kube-scheduler writes on a Pod whose
// nodeSelector no node matches.
const unschedulableMessage = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. " +
	"preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."

func waiting(name, image, reason, message string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Image: image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
}

func TestPodProblem(t *testing.T) {
	crashLooping := waiting("app", "app:1", "CrashLoopBackOff", "back-off 40s restarting failed container=app pod=web-1")
	crashLooping.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}
	crashLoopingUnknownExit := waiting("app", "app:1", "CrashLoopBackOff", "back-off 10s restarting failed container=app pod=web-1")
	oomKilled := waiting("app", "app:1", "CrashLoopBackOff", "back-off 5m0s restarting failed container=app pod=web-1")
	oomKilled.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137}
	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
		want   string
	}{
		// The scheduler found no node: its reason and message, word for word.
		{"unschedulable", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: unschedulableMessage}}},
			"cannot be scheduled (Unschedulable): " + unschedulableMessage},
		// Scheduling gates hold the Pod: the reason is the scheduler's too.
		{"scheduling gated", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}},
			"cannot be scheduled (SchedulingGated)"},
		// Not scheduled yet, no reason: the scheduler has not looked.
		{"not scheduled yet", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse}}}, ""},
		// The kubelet's first failed pull: said as ImagePullBackOff with the
		// image, without the pull error, which alternates with the back-off.
		{"ErrImagePull", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			waiting("app", "nope:1", "ErrImagePull", `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nope:1"`)}},
			`container "app" cannot pull image "nope:1" (ImagePullBackOff)`},
		// The back-off between pulls reads the same.
		{"ImagePullBackOff", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			waiting("app", "nope:1", "ImagePullBackOff", `Back-off pulling image "nope:1"`)}},
			`container "app" cannot pull image "nope:1" (ImagePullBackOff)`},
		// An init container that cannot pull is found before the others wait.
		{"init container pull", corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{waiting("init", "nope:2", "ImagePullBackOff", "")},
			ContainerStatuses:     []corev1.ContainerStatus{waiting("app", "app:1", "PodInitializing", "")}},
			`container "init" cannot pull image "nope:2" (ImagePullBackOff)`},
		// A crash loop: how the container last ended, not the growing delay.
		{"CrashLoopBackOff", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{crashLooping}},
			`container "app" is crash-looping (CrashLoopBackOff), last exit: Error, exit code 1`},
		// A last exit without a reason gives its code alone.
		{"CrashLoopBackOff exit code only", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{oomKilled}},
			`container "app" is crash-looping (CrashLoopBackOff), last exit: exit code 137`},
		// A crash loop whose last run is unknown.
		{"CrashLoopBackOff no last state", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{crashLoopingUnknownExit}},
			`container "app" is crash-looping (CrashLoopBackOff)`},
		// A Secret the container needs is missing: the kubelet's message.
		{"CreateContainerConfigError", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			waiting("app", "app:1", "CreateContainerConfigError", `secret "creds" not found`)}},
			`container "app" cannot start (CreateContainerConfigError): secret "creds" not found`},
		// Being created is on its way, not stuck.
		{"ContainerCreating", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{waiting("app", "app:1", "ContainerCreating", "")}}, ""},
		// Healthy: scheduled and running.
		{"healthy", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}, ""},
		// A finished Pod is not stuck (its Job says how it ended).
		{"succeeded", corev1.PodStatus{Phase: corev1.PodSucceeded}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-1"}, Status: tc.status}
			if got := podProblem(pod); got != tc.want {
				t.Errorf("podProblem =\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}

func TestStuckPod(t *testing.T) {
	pod := func(name string, scheduled corev1.ConditionStatus) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name}, Status: corev1.PodStatus{Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: scheduled}}}}
		if scheduled == corev1.ConditionFalse {
			p.Status.Conditions[0].Reason, p.Status.Conditions[0].Message = "Unschedulable", unschedulableMessage
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		// No Pods: nothing to name.
		{"none", nil, ""},
		// Only healthy Pods: nothing to name.
		{"healthy", []corev1.Pod{pod("web-a", corev1.ConditionTrue)}, ""},
		// The first stuck Pod by name, whatever order the list came in, so
		// that the text is the same on every read.
		{"first by name", []corev1.Pod{pod("web-c", corev1.ConditionFalse), pod("web-a", corev1.ConditionTrue), pod("web-b", corev1.ConditionFalse)},
			"Pod demo/web-b: cannot be scheduled (Unschedulable): " + unschedulableMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stuckPod(tc.pods); got != tc.want {
				t.Errorf("stuckPod = %q, want %q", got, tc.want)
			}
		})
	}
}
