package imagepolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// ReviewGVK is the kind of the image-policy extension's Hooks: one
// ImagePolicyReview per change, made by Annex.
var ReviewGVK = schema.GroupVersionKind{Group: "imagepolicy.annex.dev", Version: "v1alpha1", Kind: "ImagePolicyReview"}

// reviewCRD is the name of ReviewGVK's CustomResourceDefinition, which
// the image-policy extension installs.
const reviewCRD = "imagepolicyreviews.imagepolicy.annex.dev"

// Reasons of the answers.
const (
	reasonAllowed = "ImagesAllowed"
	reasonRefused = "ImagesRefused"
)

// Reconciler answers ImagePolicyReviews by the policy of the Hook that
// asked (its annotations). It runs in the Annex manager before the
// extension is installed, so the review kind may not be served yet: it
// watches the kind's CRD and starts watching reviews once the CRD is
// served. A change of a Hook's policy judges its reviews again, so a
// refused change goes on once the allow-list admits it.
type Reconciler struct {
	Client client.Client
	// Reader reads reviews and lists them (their kind is not in the
	// scheme, and only their metadata is cached).
	Reader client.Reader
	// Events records each new verdict on its review; nil records none.
	Events events.EventRecorder

	mu         sync.Mutex
	watching   bool
	controller controller.Controller
	cache      cache.Cache
	mapper     meta.RESTMapper
}

// +kubebuilder:rbac:groups=imagepolicy.annex.dev,resources=imagepolicyreviews,verbs=get;list;watch
// +kubebuilder:rbac:groups=imagepolicy.annex.dev,resources=imagepolicyreviews/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=annex.dev,resources=hooks,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch

// Reconcile answers one review, or, for the review kind's CRD (a request
// without namespace), starts watching reviews when they are served.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Namespace == "" {
		return r.watchReviews(ctx)
	}
	review := &unstructured.Unstructured{}
	review.SetGroupVersionKind(ReviewGVK)
	if err := r.Reader.Get(ctx, req.NamespacedName, review); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	hook := &v1alpha1.Hook{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: review.GetLabels()[v1alpha1.LabelHook]}, hook); err != nil {
		// No Hook: nobody waits for the answer any more.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// spec.annex.images are the images of the change's objects, which
	// Annex extracts from them (spec.annex.objects holds the objects
	// themselves, for hooks that judge more than images).
	images, _, _ := unstructured.NestedStringSlice(review.Object, "spec", "annex", "images")
	ok, message := Evaluate(images, PolicyOf(hook.Annotations))
	return ctrl.Result{}, r.answer(ctx, review, ok, message)
}

// answer writes the verdict as the Hook contract reads it: Succeeded
// True and Failed False, or the reverse, with the message.
func (r *Reconciler) answer(ctx context.Context, review *unstructured.Unstructured, ok bool, message string) error {
	var conds []metav1.Condition
	if raw, found, _ := unstructured.NestedSlice(review.Object, "status", "conditions"); found {
		if err := runtimeConvert(raw, &conds); err != nil {
			conds = nil // unreadable: written anew
		}
	}
	before := append([]metav1.Condition(nil), conds...)
	succeeded, failed, reason := metav1.ConditionTrue, metav1.ConditionFalse, reasonAllowed
	if !ok {
		succeeded, failed, reason = metav1.ConditionFalse, metav1.ConditionTrue, reasonRefused
	}
	meta.SetStatusCondition(&conds, metav1.Condition{Type: v1alpha1.ConditionSucceeded, Status: succeeded, Reason: reason, Message: message, ObservedGeneration: review.GetGeneration()})
	meta.SetStatusCondition(&conds, metav1.Condition{Type: v1alpha1.ConditionFailed, Status: failed, Reason: reason, Message: message, ObservedGeneration: review.GetGeneration()})
	if equality.Semantic.DeepEqual(before, conds) {
		return nil
	}
	var out []any
	if err := runtimeConvert(conds, &out); err != nil {
		return err
	}
	if err := unstructured.SetNestedSlice(review.Object, out, "status", "conditions"); err != nil {
		return err
	}
	if err := r.Client.Status().Update(ctx, review); err != nil {
		return client.IgnoreNotFound(err)
	}
	eventType := corev1.EventTypeNormal
	if !ok {
		eventType = corev1.EventTypeWarning
	}
	log.FromContext(ctx).Info(message, "event", reason, "type", eventType, "review", review.GetNamespace()+"/"+review.GetName())
	if r.Events != nil {
		r.Events.Eventf(review, nil, eventType, reason, "Review", "%s", message)
	}
	return nil
}

// watchReviews starts the watch of reviews once their kind is served.
// The API server serves a CRD's kind a moment after it reports it
// Established, with no event to say so: while the CRD exists and its
// kind is not served yet, it looks again every second.
func (r *Reconciler) watchReviews(ctx context.Context) (ctrl.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watching {
		return ctrl.Result{}, nil
	}
	if _, err := r.mapper.RESTMapping(ReviewGVK.GroupKind(), ReviewGVK.Version); err != nil {
		if !meta.IsNoMatchError(err) {
			return ctrl.Result{}, err
		}
		crd := &metav1.PartialObjectMetadata{}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		if err := r.Client.Get(ctx, types.NamespacedName{Name: reviewCRD}, crd); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(ReviewGVK)
	if err := r.controller.Watch(source.Kind[client.Object](r.cache, obj, &handler.EnqueueRequestForObject{})); err != nil {
		return ctrl.Result{}, err
	}
	r.watching = true
	return ctrl.Result{}, nil
}

// SetupWithManager registers the controller: the reviews' CRD, the
// Hooks (a changed policy judges their reviews again), and the reviews
// once served.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("imagepolicy").
		For(&apiextensionsv1.CustomResourceDefinition{}, builder.OnlyMetadata, builder.WithPredicates(
			predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == reviewCRD }))).
		Watches(&v1alpha1.Hook{}, handler.EnqueueRequestsFromMapFunc(r.reviewsOfHook),
			builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
		Build(r)
	if err != nil {
		return err
	}
	r.controller, r.cache, r.mapper = c, mgr.GetCache(), mgr.GetRESTMapper()
	return nil
}

// reviewsOfHook lists the reviews made for a Hook.
func (r *Reconciler) reviewsOfHook(ctx context.Context, hook client.Object) []reconcile.Request {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(ReviewGVK.GroupVersion().WithKind(ReviewGVK.Kind + "List"))
	if err := r.Reader.List(ctx, list, client.MatchingLabels{v1alpha1.LabelHook: hook.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, item := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: item.Namespace, Name: item.Name}})
	}
	return out
}

// runtimeConvert converts between typed and unstructured values through
// JSON.
func runtimeConvert(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encoding conditions: %w", err)
	}
	return json.Unmarshal(data, out)
}
