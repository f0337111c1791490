package exampleoperator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reconciler publishes Banners as ConfigMaps; see the package comment.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Version is the operator version, e.g. 0.2.0.
	Version string

	behaviour behaviour
}

// NewReconciler returns the reconciler of an operator version; an error
// means the version is not semver.
func NewReconciler(c client.Client, recorder events.EventRecorder, version string) (*Reconciler, error) {
	b, err := behaviourOf(version)
	if err != nil {
		return nil, err
	}
	return &Reconciler{Client: c, Recorder: recorder, Version: version, behaviour: b}, nil
}

// SetupWithManager registers the controller: Banners, and ConfigMaps named
// <banner>-banner (the operator's own and those in its way alike, so that
// deleting a conflicting ConfigMap lets the Banner proceed).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("banner").
		For(&Banner{}).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(bannerOfConfigMap)).
		Complete(r)
}

func bannerOfConfigMap(_ context.Context, obj client.Object) []reconcile.Request {
	name, ok := strings.CutSuffix(obj.GetName(), configMapSuffix)
	if !ok || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// Reconcile publishes one Banner: finalizer, ConfigMap, then status.
// Errors are retried with backoff; a conflict is not an error (the user
// must act, and the ConfigMap watch brings the Banner back when they do).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &Banner{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.cleanUp(ctx, b)
	}
	if controllerutil.AddFinalizer(b, Finalizer) {
		// The update's event brings the Banner back for the next step.
		return ctrl.Result{}, r.Client.Update(ctx, b)
	}
	before := b.DeepCopy()
	p := r.publish(ctx, b)
	setStatus(b, p, r.Version, r.behaviour)
	r.announce(before, b, p)
	if !equality.Semantic.DeepEqual(before.Status, b.Status) {
		if err := r.Client.Status().Patch(ctx, b, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, p.err
}

// published is what publishing a Banner's ConfigMap found.
type published struct {
	configMap string
	op        controllerutil.OperationResult
	// conflict: a ConfigMap of that name exists that the Banner does not
	// control.
	conflict bool
	// err: the API refused a read or write.
	err error
}

var errNotControlled = errors.New("not controlled by the Banner")

// publish creates or updates the Banner's ConfigMap, unless another
// object's ConfigMap has the name.
func (r *Reconciler) publish(ctx context.Context, b *Banner) published {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: ConfigMapName(b.Name)}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		if !cm.CreationTimestamp.IsZero() && !metav1.IsControlledBy(cm, b) {
			return errNotControlled
		}
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels["app.kubernetes.io/managed-by"] = Name
		cm.Data = map[string]string{"message": b.Spec.Message}
		if r.behaviour.recordVersion {
			cm.Data["version"] = r.Version
		}
		return controllerutil.SetControllerReference(b, cm, r.Client.Scheme())
	})
	p := published{configMap: cm.Name, op: op}
	switch {
	case errors.Is(err, errNotControlled):
		p.conflict = true
	case err != nil:
		p.err = err
	}
	return p
}

// setStatus records p in b's status; a pure function of its inputs.
// status.observedGeneration moves when the ConfigMap holds the message and
// on a conflict (the user must act), not on a failed write, which is
// retried. status.configMapName is set, by versions that record it, only
// while the ConfigMap holds the message.
func setStatus(b *Banner, p published, version string, bh behaviour) {
	cond := metav1.Condition{Type: ConditionReady, ObservedGeneration: b.Generation}
	b.Status.ConfigMapName = ""
	switch {
	case p.err != nil:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonFailed
		cond.Message = fmt.Sprintf("cannot write ConfigMap %s: %v", p.configMap, p.err)
	case p.conflict:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonConflict
		cond.Message = fmt.Sprintf("ConfigMap %s exists and this Banner does not control it; delete that ConfigMap (kubectl delete configmap %s -n %s) or give the Banner another name",
			p.configMap, p.configMap, b.Namespace)
		b.Status.ObservedGeneration = b.Generation
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonCreated
		cond.Message = fmt.Sprintf("ConfigMap %s holds the message", p.configMap)
		if bh.recordVersion {
			cond.Message += fmt.Sprintf(" (%s %s)", Name, version)
			b.Status.ConfigMapName = p.configMap
		}
		b.Status.ObservedGeneration = b.Generation
	}
	meta.SetStatusCondition(&b.Status.Conditions, cond)
}

// announce records an event for what changed: the ConfigMap written, or a
// conflict or failure newly found.
func (r *Reconciler) announce(before, after *Banner, p published) {
	if r.Recorder == nil {
		return
	}
	switch {
	case p.op == controllerutil.OperationResultCreated || p.op == controllerutil.OperationResultUpdated:
		r.Recorder.Eventf(after, nil, corev1.EventTypeNormal, string(p.op), "Publish", "ConfigMap %s %s", p.configMap, p.op)
	case p.conflict || p.err != nil:
		c := meta.FindStatusCondition(after.Status.Conditions, ConditionReady)
		if !hasReason(before, c.Reason) {
			r.Recorder.Eventf(after, nil, corev1.EventTypeWarning, c.Reason, "Publish", "%s", c.Message)
		}
	}
}

func hasReason(b *Banner, reason string) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, ConditionReady)
	return c != nil && c.Reason == reason
}

// cleanUp deletes the Banner's ConfigMap, if the Banner controls it, and
// then releases the finalizer.
func (r *Reconciler) cleanUp(ctx context.Context, b *Banner) error {
	if !controllerutil.ContainsFinalizer(b, Finalizer) {
		return nil
	}
	cm := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: ConfigMapName(b.Name)}, cm)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case metav1.IsControlledBy(cm, b):
		if err := r.Client.Delete(ctx, cm, client.Preconditions{UID: &cm.UID}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	controllerutil.RemoveFinalizer(b, Finalizer)
	// NotFound: another round released it already and the Banner is gone.
	return client.IgnoreNotFound(r.Client.Update(ctx, b))
}
