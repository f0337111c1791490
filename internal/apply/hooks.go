package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// DefaultHookTimeout bounds the wait for one hook when
// HookOptions.HookTimeout is zero; it is Helm's default.
const DefaultHookTimeout = 5 * time.Minute

// hookPollInterval is how often a running hook Job or Pod is read.
const hookPollInterval = 200 * time.Millisecond

// HookOptions change how a chart's plan (Start) writes and runs hooks.
type HookOptions struct {
	ApplyOptions
	// IsUpgrade runs the pre-upgrade and post-upgrade hooks instead of the
	// pre-install and post-install ones.
	IsUpgrade bool
	// HookTimeout bounds the wait for each hook Job or Pod; zero means
	// DefaultHookTimeout.
	HookTimeout time.Duration
}

func (o HookOptions) timeout() time.Duration {
	if o.HookTimeout > 0 {
		return o.HookTimeout
	}
	return DefaultHookTimeout
}

// HookError is a hook Job or Pod that failed or did not finish in time.
type HookError struct {
	Hook   HookEvent
	Object v1alpha1.ObjectReference
	// TimedOut is true when the hook did not finish within Timeout.
	TimedOut bool
	Timeout  time.Duration
	// Reason and Message come from the Job's Failed condition (or the
	// Pod's status); on a timeout, Message tells the last state seen.
	Reason, Message string
	// StuckPod, on a timeout, names the hook's Pod that could not run and
	// the scheduler's or kubelet's reason (see stuckPod), when one did
	// not.
	StuckPod string
}

// HookFailed marks the error for callers that classify errors without
// importing this package.
func (e *HookError) HookFailed() bool { return true }

func (e *HookError) Error() string {
	obj := describe(e.Object)
	if e.TimedOut && e.StuckPod != "" {
		return fmt.Sprintf("%s hook %s did not complete within %s: %s; "+
			"change what keeps the Pod from running (in the chart's values: nodeSelector, tolerations, resources, image) and retry",
			e.Hook, obj, e.Timeout, e.StuckPod)
	}
	if e.TimedOut {
		return fmt.Sprintf("%s hook %s did not complete within %s (%s): "+
			"make the hook finish sooner or raise the installation's timeout", e.Hook, obj, e.Timeout, e.Message)
	}
	why := e.Message
	if e.Reason != "" {
		why = e.Reason + ": " + e.Message
	}
	return fmt.Sprintf("%s hook %s failed: %s; see the logs of its Pods, fix the chart or its values, and retry",
		e.Hook, obj, why)
}

// RunDeleteHooks runs the hooks of set for event, HookPreDelete (before
// the caller's Delete) or HookPostDelete (once Delete reports nothing
// remaining), as a chart's plan runs hooks (see Start), each awaited at most timeout
// (zero means DefaultHookTimeout). The Namespace named defaultNamespace,
// when set brings it, is applied before the hooks, so that it is there
// for them even if someone deleted it: a caller that deletes it deletes
// it after the post-delete hooks. A set without such hooks makes no
// requests.
func (a *Applier) RunDeleteHooks(ctx context.Context, owner Owner, defaultNamespace string, set Set, event HookEvent, timeout time.Duration) error {
	if event != HookPreDelete && event != HookPostDelete {
		return fmt.Errorf("run delete hooks: event %q is not %q or %q", event, HookPreDelete, HookPostDelete)
	}
	set = copySet(set)
	steps := planHooks(set, defaultNamespace, event)
	if len(steps) == 0 {
		return nil
	}
	_, err := a.run(ctx, owner, defaultNamespace, steps, HookOptions{HookTimeout: timeout})
	return err
}

// runHookStep runs the hooks of st one at a time. The hooks that
// succeeded and are to be deleted then (hook-succeeded) join succeeded.
func (a *Applier) runHookStep(ctx context.Context, owner Owner, st Step, opts HookOptions, succeeded *[]*unstructured.Unstructured) error {
	for _, obj := range st.Objects {
		if err := a.runHook(ctx, owner, st.Hook, obj, opts, succeeded); err != nil {
			return err
		}
	}
	return nil
}

// runHook applies one hook object, awaits it and applies its delete
// policies: hook-failed at once, hook-succeeded by adding obj to
// succeeded, which deleteSucceeded empties once every hook of the event
// succeeded, as Helm does: the ServiceAccount and RBAC hooks of a Job hook
// must outlive the Job.
func (a *Applier) runHook(ctx context.Context, owner Owner, event HookEvent, obj *unstructured.Unstructured, opts HookOptions, succeeded *[]*unstructured.Unstructured) error {
	policies := deletePolicies(obj)
	if slices.Contains(policies, policyBeforeCreation) {
		if err := a.deleteHookObject(ctx, owner, obj, opts.timeout(), true); err != nil {
			return err
		}
	}
	if _, err := a.applyOne(ctx, owner, obj, opts.TakeOwnership); err != nil {
		return err
	}
	err := a.awaitHook(ctx, event, obj, opts.timeout())
	var hookErr *HookError
	switch {
	case err == nil && slices.Contains(policies, policySucceeded):
		*succeeded = append(*succeeded, obj)
	case errors.As(err, &hookErr) && !hookErr.TimedOut && slices.Contains(policies, policyFailed):
		if delErr := a.deleteHookObject(ctx, owner, obj, opts.timeout(), false); delErr != nil {
			return errors.Join(err, delErr)
		}
	}
	return err
}

// deleteSucceeded deletes the hooks of hooks (those of one event that
// all succeeded, with the hook-succeeded policy), last applied first.
func (a *Applier) deleteSucceeded(ctx context.Context, owner Owner, hooks []*unstructured.Unstructured, timeout time.Duration) error {
	for i := len(hooks) - 1; i >= 0; i-- {
		if err := a.deleteHookObject(ctx, owner, hooks[i], timeout, false); err != nil {
			return err
		}
	}
	return nil
}

// deleteHookObject deletes the live object named like obj if it belongs
// to owner, and with wait waits until it is gone. An object of another
// installation is a *ConflictError; one without labels is left for the
// apply to handle.
func (a *Applier) deleteHookObject(ctx context.Context, owner Owner, obj *unstructured.Unstructured, timeout time.Duration, waitGone bool) error {
	ref := refOf(obj)
	live, err := a.get(ctx, ref)
	if err != nil {
		return &ObjectError{Op: "read", Object: ref, Err: err}
	}
	if live == nil {
		return nil
	}
	if other := installationOf(live); other != "" && other != owner.String() {
		return &ConflictError{Object: ref, Installation: other}
	}
	if !owner.owns(live) {
		return nil
	}
	outcome, err := a.deleteOne(ctx, live)
	if err != nil {
		return &ObjectError{Op: "delete", Object: ref, Err: err}
	}
	if !waitGone || outcome != deletePending {
		return nil
	}
	timedOut, err := pollUntil(ctx, timeout, func(ctx context.Context) (bool, error) {
		exists, err := a.exists(ctx, live)
		return !exists, err
	})
	switch {
	case err != nil:
		return &ObjectError{Op: "delete", Object: ref, Err: err}
	case timedOut:
		return &ObjectError{Op: "delete", Object: ref,
			Err: fmt.Errorf("the previous hook object is still there after %s; remove its finalizers or delete it by hand", timeout)}
	}
	return nil
}

// pollUntil calls done every hookPollInterval until it returns true or an
// error, or until timeout has passed (timedOut). Unlike a context deadline,
// the timeout never fails a request that is under way.
func pollUntil(ctx context.Context, timeout time.Duration, done func(context.Context) (bool, error)) (timedOut bool, err error) {
	deadline := time.Now().Add(timeout)
	err = wait.PollUntilContextCancel(ctx, hookPollInterval, true, func(ctx context.Context) (bool, error) {
		ok, err := done(ctx)
		if ok || err != nil {
			return ok, err
		}
		timedOut = time.Now().After(deadline)
		return timedOut, nil
	})
	return timedOut, err
}

// awaitHook waits until a hook Job or Pod finished; other kinds finish
// when applied.
func (a *Applier) awaitHook(ctx context.Context, event HookEvent, obj *unstructured.Unstructured, timeout time.Duration) error {
	gvk := obj.GroupVersionKind()
	var state func(*unstructured.Unstructured) hookState
	switch {
	case gvk.Group == "batch" && gvk.Kind == "Job":
		state = jobState
	case gvk.Group == "" && gvk.Kind == "Pod":
		state = podState
	default:
		return nil
	}
	ref := refOf(obj)
	var (
		last     hookState
		lastLive *unstructured.Unstructured
	)
	timedOut, err := pollUntil(ctx, timeout, func(ctx context.Context) (bool, error) {
		live, err := a.get(ctx, ref)
		if err != nil {
			return false, &ObjectError{Op: "read", Object: ref, Err: err}
		}
		lastLive = live
		if live == nil {
			if removedOnceFinished(obj) {
				// The TTL controller deletes a Job only once it finished:
				// gone counts as done, as Helm counts a deleted hook.
				last = hookState{done: true}
				return true, nil
			}
			last = hookState{message: "the object was deleted while it ran"}
			return false, nil
		}
		last = state(live)
		return last.done, nil
	})
	switch {
	case err != nil:
		return err
	case timedOut:
		return &HookError{Hook: event, Object: ref, TimedOut: true, Timeout: timeout, Message: last.message,
			StuckPod: a.stuckHookPod(ctx, lastLive)}
	case last.failed:
		return &HookError{Hook: event, Object: ref, Reason: last.reason, Message: last.message}
	}
	return nil
}

// removedOnceFinished reports whether hook is a Job that Kubernetes
// deletes by itself once it finished (spec.ttlSecondsAfterFinished, which
// charts such as ingress-nginx set to 0 on their hook Jobs), so that
// finding it gone means it finished.
func removedOnceFinished(hook *unstructured.Unstructured) bool {
	if hook.GroupVersionKind().Group != "batch" || hook.GetKind() != "Job" {
		return false
	}
	_, found, _ := unstructured.NestedFieldNoCopy(hook.Object, "spec", "ttlSecondsAfterFinished")
	return found
}

// stuckHookPod names the Pod of a hook Job, or the hook Pod itself, that
// could not run, and why (see stuckPod); "" when none is stuck or live is
// gone. It reads the Pods only once the hook has timed out.
func (a *Applier) stuckHookPod(ctx context.Context, live *unstructured.Unstructured) string {
	if live == nil {
		return ""
	}
	if live.GroupVersionKind().Kind == "Job" {
		return a.podProblemOf(ctx, live)
	}
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &pod); err != nil {
		return ""
	}
	return stuckPod([]corev1.Pod{pod})
}

// hookState is what a hook Job or Pod says about its run.
type hookState struct {
	done, failed    bool
	reason, message string
}

// jobState reads a Job's Complete and Failed conditions.
func jobState(job *unstructured.Unstructured) hookState {
	for _, c := range conditions(job) {
		if c.status != "True" {
			continue
		}
		switch c.typ {
		case "Complete":
			return hookState{done: true}
		case "Failed":
			return hookState{done: true, failed: true, reason: c.reason, message: c.message}
		}
	}
	active, _, _ := unstructured.NestedInt64(job.Object, "status", "active")
	failed, _, _ := unstructured.NestedInt64(job.Object, "status", "failed")
	return hookState{message: fmt.Sprintf("no Complete or Failed condition yet; %d active and %d failed Pods", active, failed)}
}

// podState reads a Pod's phase.
func podState(pod *unstructured.Unstructured) hookState {
	phase, _, _ := unstructured.NestedString(pod.Object, "status", "phase")
	reason, _, _ := unstructured.NestedString(pod.Object, "status", "reason")
	message, _, _ := unstructured.NestedString(pod.Object, "status", "message")
	switch phase {
	case "Succeeded":
		return hookState{done: true}
	case "Failed":
		return hookState{done: true, failed: true, reason: reason, message: message}
	}
	if phase == "" {
		phase = "Pending"
	}
	return hookState{message: "Pod phase is " + phase}
}

// condition is one entry of status.conditions.
type condition struct {
	typ, status, reason, message string
	observedGeneration           int64
}

// conditions returns obj's status.conditions; malformed entries are
// skipped.
func conditions(obj *unstructured.Unstructured) []condition {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []condition
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		gen, _ := number(m["observedGeneration"])
		out = append(out, condition{typ: str("type"), status: str("status"), reason: str("reason"),
			message: str("message"), observedGeneration: int64(gen)})
	}
	return out
}
