// Package catalog reconciles Catalogs: it reads the source on spec.interval
// and on spec change, and keeps one Extension per package in step with it.
// A sync that finds the same content writes nothing.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
)

// Source reads a catalog's content.
type Source interface {
	// Index returns the parsed content of the catalog's source. Errors are
	// retried with backoff; the Extensions of the last good sync stay.
	Index(ctx context.Context, cat *v1alpha1.Catalog) (*catalog.Index, error)
}

// Reconciler syncs Catalogs into Extensions.
type Reconciler struct {
	Client client.Client
	Source Source
	// Now returns the current time; tests may fix it.
	Now func() time.Time
}

// +kubebuilder:rbac:groups=annex.dev,resources=catalogs,verbs=get;list;watch
// +kubebuilder:rbac:groups=annex.dev,resources=catalogs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=annex.dev,resources=extensions,verbs=get;list;watch;create;update;patch;delete

// Reconcile syncs one Catalog.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cat := &v1alpha1.Catalog{}
	if err := r.Client.Get(ctx, req.NamespacedName, cat); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	written := cat.DeepCopy()
	if cat.Spec.Suspend {
		setReady(cat, metav1.ConditionFalse, v1alpha1.ReasonSuspended, "spec.suspend is true: the catalog is not synced; its Extensions stay")
		cat.Status.ObservedGeneration = cat.Generation
		return ctrl.Result{}, r.patchStatus(ctx, written, cat)
	}

	index, err := r.Source.Index(ctx, cat)
	if errors.Is(err, catalog.ErrSourceNotSupported) {
		msg := fmt.Sprintf("%s: %v; use a helm or builtin source", sourceField(cat), err)
		setReady(cat, metav1.ConditionFalse, v1alpha1.ReasonSourceInvalid, msg)
		setCondition(cat, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonSourceInvalid, msg)
		cat.Status.ObservedGeneration = cat.Generation
		return ctrl.Result{}, r.patchStatus(ctx, written, cat)
	}
	if err != nil {
		msg := fmt.Sprintf("%s: %v; the Extensions of the last good sync stay available", sourceField(cat), err)
		setReady(cat, metav1.ConditionFalse, v1alpha1.ReasonFetchFailed, msg)
		setCondition(cat, v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonFetchFailed, msg)
		if perr := r.patchStatus(ctx, written, cat); perr != nil {
			return ctrl.Result{}, perr
		}
		return ctrl.Result{}, err
	}

	if !r.upToDate(cat, index) {
		conflicts, err := r.syncExtensions(ctx, cat, index)
		if err != nil {
			return ctrl.Result{}, err
		}
		cat.Status.ArtifactDigest = index.Digest
		cat.Status.ExtensionCount = int32(len(index.Packages) - len(conflicts))
		cat.Status.SkippedEntries = int32(len(index.Skipped))
		now := metav1.NewTime(r.now())
		cat.Status.LastChangeTime = &now
		setReady(cat, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, readyMessage(cat, index, conflicts))
	}
	meta.RemoveStatusCondition(&cat.Status.Conditions, v1alpha1.ConditionReconciling)
	meta.RemoveStatusCondition(&cat.Status.Conditions, v1alpha1.ConditionStalled)
	cat.Status.ObservedGeneration = cat.Generation
	if err := r.patchStatus(ctx, written, cat); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: interval(cat)}, nil
}

// upToDate reports whether the last sync, for this generation, already
// produced the Extensions of this exact index.
func (r *Reconciler) upToDate(cat *v1alpha1.Catalog, index *catalog.Index) bool {
	ready := meta.FindStatusCondition(cat.Status.Conditions, v1alpha1.ConditionReady)
	return cat.Status.ArtifactDigest == index.Digest &&
		cat.Status.ObservedGeneration == cat.Generation &&
		ready != nil && ready.Status == metav1.ConditionTrue
}

// syncExtensions creates, updates and deletes this catalog's Extensions so
// that they match index, writing only what differs. It returns the packages
// it could not write because another catalog supplies an Extension of that
// name.
func (r *Reconciler) syncExtensions(ctx context.Context, cat *v1alpha1.Catalog, index *catalog.Index) ([]string, error) {
	var existing v1alpha1.ExtensionList
	if err := r.Client.List(ctx, &existing, client.MatchingLabels{v1alpha1.LabelCatalog: cat.Name}); err != nil {
		return nil, err
	}
	wanted := map[string]bool{}
	var conflicts []string
	for _, pkg := range index.Packages {
		wanted[pkg.Name] = true
		conflict, err := r.writeExtension(ctx, cat, pkg)
		if err != nil {
			return nil, err
		}
		if conflict != "" {
			conflicts = append(conflicts, fmt.Sprintf("%s (supplied by catalog %q)", pkg.Name, conflict))
		}
	}
	for i := range existing.Items {
		ext := &existing.Items[i]
		if !wanted[ext.Name] {
			if err := r.Client.Delete(ctx, ext); client.IgnoreNotFound(err) != nil {
				return nil, err
			}
		}
	}
	sort.Strings(conflicts)
	return conflicts, nil
}

// writeExtension creates or updates one Extension when it differs. It
// returns the name of the other catalog that owns an Extension of this name,
// if one does.
func (r *Reconciler) writeExtension(ctx context.Context, cat *v1alpha1.Catalog, pkg catalog.Package) (string, error) {
	ext := &v1alpha1.Extension{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: pkg.Name}, ext)
	if apierrors.IsNotFound(err) {
		ext = &v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{
			Name:   pkg.Name,
			Labels: map[string]string{v1alpha1.LabelCatalog: cat.Name},
		}, Spec: pkg.Spec}
		if err := controllerutil.SetControllerReference(cat, ext, r.Client.Scheme()); err != nil {
			return "", err
		}
		return "", r.Client.Create(ctx, ext)
	}
	if err != nil {
		return "", err
	}
	if owner := ext.Labels[v1alpha1.LabelCatalog]; owner != cat.Name {
		if owner == "" {
			owner = "(written by hand)"
		}
		return owner, nil
	}
	if equality.Semantic.DeepEqual(ext.Spec, pkg.Spec) {
		return "", nil
	}
	ext.Spec = pkg.Spec
	return "", r.Client.Update(ctx, ext)
}

func (r *Reconciler) patchStatus(ctx context.Context, written, cat *v1alpha1.Catalog) error {
	if equality.Semantic.DeepEqual(written.Status, cat.Status) {
		return nil
	}
	return r.Client.Status().Patch(ctx, cat, client.MergeFrom(written))
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func readyMessage(cat *v1alpha1.Catalog, index *catalog.Index, conflicts []string) string {
	msg := fmt.Sprintf("synced %d extensions", cat.Status.ExtensionCount)
	if len(index.Skipped) > 0 {
		msg += fmt.Sprintf("; skipped %d malformed entries (first: %s)", len(index.Skipped), index.Skipped[0])
	}
	if len(conflicts) > 0 {
		msg += fmt.Sprintf("; not written because another catalog supplies them: %s", strings.Join(conflicts, ", "))
	}
	return msg
}

func sourceField(cat *v1alpha1.Catalog) string {
	switch s := cat.Spec.Source; {
	case s.Helm != nil:
		return fmt.Sprintf("spec.source.helm.url %s", s.Helm.URL)
	case s.OCI != nil:
		return fmt.Sprintf("spec.source.oci.repository %s", s.OCI.Repository)
	case s.Directory != nil:
		return fmt.Sprintf("spec.source.directory.path %s", s.Directory.Path)
	default:
		return "spec.source.builtin"
	}
}

func interval(cat *v1alpha1.Catalog) time.Duration {
	if cat.Spec.Interval.Duration > 0 {
		return cat.Spec.Interval.Duration
	}
	return 10 * time.Minute
}

func setReady(cat *v1alpha1.Catalog, status metav1.ConditionStatus, reason, message string) {
	setCondition(cat, v1alpha1.ConditionReady, status, reason, message)
}

func setCondition(cat *v1alpha1.Catalog, t string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&cat.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: cat.Generation,
	})
}

// SetupWithManager registers the controller; it reconciles on spec changes
// (generation) and on its own schedule (RequeueAfter spec.interval).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Catalog{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("catalog").
		Complete(r)
}
