// Package hook reconciles Hooks: it tells in a Hook's Ready condition
// whether the API server serves the Hook's kind as a namespaced
// resource, so that a Hook registered before its CustomResourceDefinition
// (or whose CRD was removed) says so instead of failing installations
// obscurely. Asking hooks is the installation controller's gate.
package hook

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Discovery lists the resources the API server serves in one group
// version (discovery.DiscoveryInterface has it). An unknown group version
// is a NotFound error.
type Discovery interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// Reconciler sets the Ready condition of Hooks.
type Reconciler struct {
	Client client.Client
	// Discovery is read on every reconcile, uncached: a cached REST
	// mapping would not notice a deleted CRD.
	Discovery Discovery
	// Events records when a Hook's kind becomes served or stops being
	// served; nil records nothing.
	Events events.EventRecorder
}

// +kubebuilder:rbac:groups=annex.dev,resources=hooks,verbs=get;list;watch
// +kubebuilder:rbac:groups=annex.dev,resources=hooks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch

// Reconcile checks that the Hook's kind is served and namespaced.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	hook := &v1alpha1.Hook{}
	if err := r.Client.Get(ctx, req.NamespacedName, hook); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := hook.DeepCopy()
	status, reason, message, err := r.served(hook.Spec)
	if err != nil {
		return ctrl.Result{}, err
	}
	meta.SetStatusCondition(&hook.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionReady, Status: status, Reason: reason, Message: message, ObservedGeneration: hook.Generation,
	})
	hook.Status.ObservedGeneration = hook.Generation
	if equality.Semantic.DeepEqual(before.Status, hook.Status) {
		return r.recheck(status), nil
	}
	if err := r.Client.Status().Patch(ctx, hook, client.MergeFrom(before)); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.tell(ctx, hook, before.Status.Conditions)
	return r.recheck(status), nil
}

// tell records an Event, and logs it, when the Hook's Ready condition
// changed status or reason: its kind became usable (Normal Ready), or
// stopped being so (Warning, with the reason). Rewording records
// nothing.
func (r *Reconciler) tell(ctx context.Context, hook *v1alpha1.Hook, before []metav1.Condition) {
	was := meta.FindStatusCondition(before, v1alpha1.ConditionReady)
	now := meta.FindStatusCondition(hook.Status.Conditions, v1alpha1.ConditionReady)
	if now == nil || was != nil && was.Status == now.Status && was.Reason == now.Reason {
		return
	}
	eventType, reason := corev1.EventTypeWarning, now.Reason
	if now.Status == metav1.ConditionTrue {
		eventType, reason = corev1.EventTypeNormal, v1alpha1.ConditionReady
	}
	log.FromContext(ctx).Info(now.Message, "hook", hook.Name, "event", reason, "type", eventType)
	if r.Events != nil {
		r.Events.Eventf(hook, nil, eventType, reason, "Reconcile", "%s", now.Message)
	}
}

// notServedRecheck is how often a Hook whose kind is not served is
// looked at again. A CRD's events wake its Hooks, but the API server
// serves the kind a moment after the CRD's last event (Established), and
// nothing announces that.
const notServedRecheck = 10 * time.Second

func (r *Reconciler) recheck(status metav1.ConditionStatus) ctrl.Result {
	if status == metav1.ConditionTrue {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: notServedRecheck}
}

// served says whether spec.resource is served as a namespaced kind, as
// the Ready condition's status, reason and message. Errors other than an
// unknown group version are the API server's, retried.
func (r *Reconciler) served(spec v1alpha1.HookSpec) (metav1.ConditionStatus, string, string, error) {
	res := spec.Resource
	kind := fmt.Sprintf("kind %s of %s", res.Kind, res.APIVersion)
	until := "changes of the installations it selects wait (failurePolicy Fail)"
	if spec.FailurePolicy == v1alpha1.HookIgnore {
		until = "installations it selects go on without it (failurePolicy Ignore)"
	}
	notServed := "spec.resource: " + kind + " is not served by the API server: install the hook's CustomResourceDefinition; until then, " + until
	list, err := r.Discovery.ServerResourcesForGroupVersion(res.APIVersion)
	switch {
	case apierrors.IsNotFound(err):
		return metav1.ConditionFalse, v1alpha1.ReasonKindNotServed, notServed, nil
	case err != nil:
		return "", "", "", err
	}
	for _, r := range list.APIResources {
		if r.Kind != res.Kind || strings.Contains(r.Name, "/") {
			continue
		}
		if !r.Namespaced {
			return metav1.ConditionFalse, v1alpha1.ReasonClusterScopedKind,
				"spec.resource: " + kind + " is cluster-scoped: Annex creates a hook's resources in the installation's namespace, so spec.resource must name a namespaced kind", nil
		}
		return metav1.ConditionTrue, v1alpha1.ReasonSucceeded, fmt.Sprintf("Annex creates a %s for every %s it selects", res.Kind, eventNames(spec.Events)), nil
	}
	return metav1.ConditionFalse, v1alpha1.ReasonKindNotServed, notServed, nil
}

func eventNames(es []v1alpha1.HookEvent) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}

// SetupWithManager reconciles a Hook when it changes and when a
// CustomResourceDefinition of its group comes, goes or changes (metadata
// is enough: a CRD's name is "<plural>.<group>").
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Hook{}).
		Watches(&apiextensionsv1.CustomResourceDefinition{}, handler.EnqueueRequestsFromMapFunc(r.hooksOfGroup), builder.OnlyMetadata).
		Named("hook").
		Complete(r)
}

// hooksOfGroup maps a CRD to the Hooks of its group.
func (r *Reconciler) hooksOfGroup(ctx context.Context, crd client.Object) []reconcile.Request {
	_, group, _ := strings.Cut(crd.GetName(), ".")
	var hooks v1alpha1.HookList
	if err := r.Client.List(ctx, &hooks); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, h := range hooks.Items {
		if gv, err := schema.ParseGroupVersion(h.Spec.Resource.APIVersion); err == nil && gv.Group == group {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&h)})
		}
	}
	return out
}
