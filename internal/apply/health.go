package apply

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Health is the state of an inventory at one moment.
type Health struct {
	// Ready is true when every object exists and is Current.
	Ready bool
	// Failed is true when some object reports a failure it will not
	// recover from without a change (kstatus Failed).
	Failed bool
	// Total is the number of objects checked.
	Total int
	// Pending lists the objects that are not Current, in inventory order.
	Pending []ObjectStatus
}

// ObjectStatus is the health of one object.
type ObjectStatus struct {
	Ref v1alpha1.ObjectReference
	// Status is a kstatus status: InProgress, Failed, Current,
	// Terminating, NotFound or Unknown.
	Status string
	// Message says why the object is not Current.
	Message string
}

// summaryLimit is how many pending objects Summary names.
const summaryLimit = 3

// Summary describes h in one line whose text changes only when the state
// does, e.g. `2 of 5 objects not ready: Deployment demo/web: Deployment not
// Available; Greeting demo/hi: Ready condition is False`. It names at most
// three objects.
func (h Health) Summary() string {
	if len(h.Pending) == 0 {
		return fmt.Sprintf("all %d objects ready", h.Total)
	}
	named := make([]string, 0, summaryLimit)
	for _, p := range h.Pending[:min(len(h.Pending), summaryLimit)] {
		named = append(named, describe(p.Ref)+": "+p.Message)
	}
	s := fmt.Sprintf("%d of %d objects not ready: %s", len(h.Pending), h.Total, strings.Join(named, "; "))
	if more := len(h.Pending) - summaryLimit; more > 0 {
		s += fmt.Sprintf("; and %d more", more)
	}
	return s
}

// Health reads every object of inventory (Workers at a time) and computes
// its health with kstatus rules (see objectStatus). An object that does not
// exist is pending with status NotFound. The error is an *ObjectError (or
// several, joined) when objects cannot be read.
//
// A workload or Job among the pending objects Summary names has the first
// of its stuck Pods added to its message, with the scheduler's or the
// kubelet's reason (see podProblem), e.g. `Deployment not Available; Pod
// demo/web-x2v4q: cannot be scheduled (Unschedulable): 0/3 nodes are
// available: ...`. Pods are read only then: a healthy inventory costs no
// Pod reads. A webhook configuration whose Service has no ready endpoint
// is pending too (checkWebhooks).
func (a *Applier) Health(ctx context.Context, inventory []v1alpha1.ObjectReference) (Health, error) {
	objs, err := a.getAll(ctx, inventory)
	if err != nil {
		return Health{}, err
	}
	h := healthOf(inventory, objs)
	a.checkWebhooks(ctx, &h, objs, true)
	a.nameStuckPods(ctx, h, func(ref v1alpha1.ObjectReference) *unstructured.Unstructured {
		if i := slices.Index(inventory, ref); i >= 0 {
			return objs[i]
		}
		return nil
	})
	return h, nil
}

// nameStuckPods adds to the message of each workload or Job among the
// pending objects of h that Summary names the first of its stuck Pods
// (podProblemOf), live giving each object as it was read. A ready h costs
// nothing.
func (a *Applier) nameStuckPods(ctx context.Context, h Health, live func(v1alpha1.ObjectReference) *unstructured.Unstructured) {
	for i := range h.Pending[:min(len(h.Pending), summaryLimit)] {
		p := &h.Pending[i]
		if p.Status == string(status.TerminatingStatus) || p.Status == string(status.NotFoundStatus) {
			continue
		}
		obj := live(p.Ref)
		if obj == nil || !hasPods(obj) {
			continue
		}
		if stuck := a.podProblemOf(ctx, obj); stuck != "" {
			p.Message = joinNonEmpty("; ", p.Message, stuck)
		}
	}
}

// healthOf computes the health of inventory from the live objects, given
// in the same order (nil for an object that does not exist).
func healthOf(inventory []v1alpha1.ObjectReference, objs []*unstructured.Unstructured) Health {
	h := Health{Total: len(inventory)}
	for i, ref := range inventory {
		obj := objs[i]
		st := ObjectStatus{Ref: ref, Status: string(status.NotFoundStatus), Message: "object not found"}
		if obj != nil {
			st.Status, st.Message = objectStatus(obj)
		}
		if st.Status == string(status.CurrentStatus) {
			continue
		}
		if st.Status == string(status.FailedStatus) {
			h.Failed = true
		}
		h.Pending = append(h.Pending, st)
	}
	h.Ready = len(h.Pending) == 0
	return h
}

// objectStatus computes the kstatus status of obj and its message, with
// these additions. An object being deleted says which finalizers it waits
// for. A Deployment, StatefulSet or ReplicaSet scaled to zero replicas is
// Current once its controller has seen its generation, or when no
// controller has written a status yet, since there is nothing to wait
// for. An object annotated annex.dev/ready-condition is ready when that
// condition is True (readyConditionStatus); one annotated
// annex.dev/await-status is not ready before it has conditions or an
// observedGeneration. A custom resource follows customResourceStatus.
func objectStatus(obj *unstructured.Unstructured) (string, string) {
	if obj.GetDeletionTimestamp() != nil {
		return string(status.TerminatingStatus), terminatingMessage(obj)
	}
	if scaledToZero(obj) {
		return string(status.CurrentStatus), "scaled to zero replicas"
	}
	if typ := obj.GetAnnotations()[v1alpha1.AnnotationReadyCondition]; typ != "" {
		return readyConditionStatus(obj, typ)
	}
	if obj.GetAnnotations()[v1alpha1.AnnotationAwaitStatus] == "true" && !hasStatus(obj) {
		return string(status.InProgressStatus), "no status yet: waiting for its controller to report"
	}
	if isCustomGroup(obj.GroupVersionKind().Group) {
		return customResourceStatus(obj)
	}
	res, err := status.Compute(obj)
	if err != nil {
		return string(status.UnknownStatus), err.Error()
	}
	return string(res.Status), res.Message
}

func scaledToZero(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	if gvk.Group != "apps" || (gvk.Kind != "Deployment" && gvk.Kind != "StatefulSet" && gvk.Kind != "ReplicaSet") {
		return false
	}
	if obj.GetDeletionTimestamp() != nil {
		return false
	}
	replicas, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if err != nil || !found || replicas != 0 {
		return false
	}
	observed, found, err := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if err != nil {
		return false
	}
	return !found || observed == obj.GetGeneration()
}

// isCustomGroup reports whether group is not one of Kubernetes' own API
// groups (the legacy group, single-word groups such as apps and batch,
// and *.k8s.io).
func isCustomGroup(group string) bool {
	return strings.Contains(group, ".") && group != "k8s.io" && !strings.HasSuffix(group, ".k8s.io")
}

// customResourceStatus computes the health of a custom resource from the
// conditions operators commonly write:
//
//   - being deleted: Terminating;
//   - status.observedGeneration behind metadata.generation: InProgress;
//   - a Ready condition, or else an Available one, decides: True is
//     Current (unless the condition's observedGeneration is behind), any
//     other status is InProgress with the condition's reason and message;
//   - kstatus' Stalled=True is InProgress too, with its reason: Annex
//     cannot tell a terminal failure from a slow start, so it reports the
//     reason and lets the caller's deadline decide;
//   - Reconciling=True is InProgress;
//   - without any of these conditions the resource is Current.
func customResourceStatus(obj *unstructured.Unstructured) (string, string) {
	inProgress := string(status.InProgressStatus)
	if msg, behind := generationBehind(obj); behind {
		return inProgress, msg
	}
	conds := conditionsByType(obj)
	if c, ok := conds["Stalled"]; ok && c.status == "True" {
		return inProgress, "Stalled: " + reasonAndMessage(c)
	}
	for _, typ := range []string{"Ready", "Available"} {
		if c, ok := conds[typ]; ok {
			return conditionDecides(obj, c)
		}
	}
	if c, ok := conds["Reconciling"]; ok && c.status == "True" {
		return inProgress, "Reconciling: " + reasonAndMessage(c)
	}
	return string(status.CurrentStatus), ""
}

// readyConditionStatus decides by the condition of type typ alone: True
// is Current (unless it describes an older generation); anything else,
// or no such condition, is InProgress.
func readyConditionStatus(obj *unstructured.Unstructured, typ string) (string, string) {
	if msg, behind := generationBehind(obj); behind {
		return string(status.InProgressStatus), msg
	}
	c, ok := conditionsByType(obj)[typ]
	if !ok {
		return string(status.InProgressStatus), fmt.Sprintf("no %s condition yet", typ)
	}
	return conditionDecides(obj, c)
}

// conditionDecides turns the deciding condition c into a status: True is
// Current unless c's observedGeneration is behind, anything else is
// InProgress with c's reason and message.
func conditionDecides(obj *unstructured.Unstructured, c condition) (string, string) {
	if c.status != "True" {
		msg := fmt.Sprintf("%s condition is %s", c.typ, cmp.Or(c.status, "unset"))
		if rm := reasonAndMessage(c); rm != "" {
			msg += ": " + rm
		}
		return string(status.InProgressStatus), msg
	}
	if generation := obj.GetGeneration(); c.observedGeneration != 0 && c.observedGeneration < generation {
		return string(status.InProgressStatus), fmt.Sprintf("%s condition describes generation %d, not %d", c.typ, c.observedGeneration, generation)
	}
	return string(status.CurrentStatus), ""
}

// generationBehind reports a status.observedGeneration behind
// metadata.generation: the controller has not seen the latest spec.
func generationBehind(obj *unstructured.Unstructured) (string, bool) {
	generation := obj.GetGeneration()
	if observed, found, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration"); found && observed < generation {
		return fmt.Sprintf("status.observedGeneration %d is behind metadata.generation %d", observed, generation), true
	}
	return "", false
}

// hasStatus reports whether a controller has reported on obj: it has
// conditions or a status.observedGeneration.
func hasStatus(obj *unstructured.Unstructured) bool {
	_, found, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	return found || len(conditions(obj)) > 0
}

func conditionsByType(obj *unstructured.Unstructured) map[string]condition {
	conds := map[string]condition{}
	for _, c := range conditions(obj) {
		conds[c.typ] = c
	}
	return conds
}

// terminatingMessage says what an object being deleted waits for.
func terminatingMessage(obj *unstructured.Unstructured) string {
	if fins := obj.GetFinalizers(); len(fins) > 0 {
		return "being deleted, waiting for finalizers " + strings.Join(fins, ", ")
	}
	return "being deleted"
}

// reasonAndMessage joins a condition's reason and message.
func reasonAndMessage(c condition) string {
	switch {
	case c.reason == "":
		return c.message
	case c.message == "":
		return c.reason
	}
	return c.reason + ": " + c.message
}
