// Package catalog reconciles Catalogs: it reads each source on
// spec.interval and on spec change, and keeps one Extension per extension
// name in step with the merged content of every catalog that offers it.
// A sync that finds the same content writes nothing.
//
// Extensions carry a label catalog.annex.dev/<catalog> for every catalog
// that supplies one of their versions, and no owner reference: deleting a
// Catalog never deletes what depends on its Extensions by garbage
// collection. A finalizer recomputes the Extensions without the deleted
// catalog; one left without versions is deleted, and installations of it
// keep running and report that the extension is gone.
package catalog

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/metrics"
)

const (
	// LabelPrefix starts the label naming each catalog that supplies a
	// version of an Extension: catalog.annex.dev/<catalog name>.
	LabelPrefix = "catalog.annex.dev/"
	// Finalizer holds a Catalog until its Extensions are recomputed without it.
	Finalizer = "annex.dev/extensions"
	// ConditionFetchFailed (v1alpha1.ConditionFetchFailed) is True while the source cannot be read and the
	// content of the last good read is served.
	ConditionFetchFailed = v1alpha1.ConditionFetchFailed
)

// Reconciler syncs Catalogs into Extensions. It keeps each catalog's last
// content in memory to merge catalogs; it must run with one worker (the
// default), which serialises the writes of merged Extensions.
type Reconciler struct {
	Client  client.Client
	Sources Sources
	// Events records what happens to Catalogs (synced, a source that
	// cannot be read, and back); nil records none.
	Events events.EventRecorder
	// Now returns the current time; tests may fix it.
	Now func() time.Time

	mu      sync.Mutex
	indexes map[string]catalog.CatalogIndex
}

// +kubebuilder:rbac:groups=annex.dev,resources=catalogs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=annex.dev,resources=catalogs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=annex.dev,resources=catalogs/finalizers,verbs=update
// +kubebuilder:rbac:groups=annex.dev,resources=extensions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Reconcile syncs one Catalog.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cat := &v1alpha1.Catalog{}
	if err := r.Client.Get(ctx, req.NamespacedName, cat); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cat.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, cat)
	}
	if !controllerutil.ContainsFinalizer(cat, Finalizer) {
		patch := client.MergeFrom(cat.DeepCopy())
		controllerutil.AddFinalizer(cat, Finalizer)
		if err := r.Client.Patch(ctx, cat, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	written := cat.DeepCopy()
	// Whatever this reconcile ends with answers the sync requested so far.
	cat.Status.LastHandledSyncRequest = cat.Annotations[v1alpha1.AnnotationSyncRequestedAt]
	if cat.Spec.Suspend {
		setReady(cat, metav1.ConditionFalse, v1alpha1.ReasonSuspended, "spec.suspend is true: the catalog is not synced; its Extensions stay; set spec.suspend to false to sync it")
		cat.Status.ObservedGeneration = cat.Generation
		return ctrl.Result{}, r.patchStatus(ctx, written, cat)
	}

	index, err := r.Sources.Index(ctx, cat)
	if err != nil {
		metrics.CatalogSyncFailed(cat.Name)
	}
	if errors.Is(err, catalog.ErrSourceNotSupported) {
		msg := fmt.Sprintf("%s: %v; use a helm, oci, directory, builtin or olm source", sourceField(cat), err)
		setReady(cat, metav1.ConditionFalse, v1alpha1.ReasonSourceInvalid, msg)
		setCondition(cat, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonSourceInvalid, msg)
		cat.Status.ObservedGeneration = cat.Generation
		return ctrl.Result{}, r.patchStatus(ctx, written, cat)
	}
	if err != nil {
		msg := fmt.Sprintf("%s: %v; the Extensions of the last good sync stay available; Annex tries again: check that the source is up and reachable from the manager", sourceField(cat), err)
		setReady(cat, metav1.ConditionFalse, v1alpha1.ReasonFetchFailed, msg)
		setCondition(cat, v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonFetchFailed, msg)
		if perr := r.patchStatus(ctx, written, cat); perr != nil {
			return ctrl.Result{}, perr
		}
		return ctrl.Result{}, err
	}
	r.remember(cat, index)
	if index.Stale != nil {
		metrics.CatalogSyncFailed(cat.Name)
	} else {
		metrics.CatalogSynced(cat.Name, r.now())
	}

	if !r.upToDate(cat, index) {
		written, conflicts, err := r.syncExtensions(ctx, cat.Name, index)
		if err != nil {
			return ctrl.Result{}, err
		}
		cat.Status.ArtifactDigest = index.Digest
		cat.Status.ExtensionCount = int32(written)
		cat.Status.SkippedEntries = int32(len(index.Skipped))
		now := metav1.NewTime(r.now())
		cat.Status.LastChangeTime = &now
		setReady(cat, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, readyMessage(cat, index, conflicts))
	}
	setFetchFailed(cat, index, r.now())
	meta.RemoveStatusCondition(&cat.Status.Conditions, v1alpha1.ConditionReconciling)
	meta.RemoveStatusCondition(&cat.Status.Conditions, v1alpha1.ConditionStalled)
	cat.Status.ObservedGeneration = cat.Generation
	if err := r.patchStatus(ctx, written, cat); err != nil {
		return ctrl.Result{}, err
	}
	if index.Stale != nil {
		// Look again sooner than the interval while the source is down.
		return ctrl.Result{RequeueAfter: min(interval(cat), time.Minute)}, nil
	}
	return ctrl.Result{RequeueAfter: interval(cat)}, nil
}

// finalize recomputes the Extensions of a deleted catalog without it and
// lets the Catalog go.
func (r *Reconciler) finalize(ctx context.Context, cat *v1alpha1.Catalog) error {
	if !controllerutil.ContainsFinalizer(cat, Finalizer) {
		return nil
	}
	r.mu.Lock()
	delete(r.indexes, cat.Name)
	r.mu.Unlock()
	if _, _, err := r.syncExtensions(ctx, cat.Name, nil); err != nil {
		return err
	}
	r.Sources.Forget(cat.Name)
	metrics.ForgetCatalog(cat.Name)
	patch := client.MergeFrom(cat.DeepCopy())
	controllerutil.RemoveFinalizer(cat, Finalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, cat, patch))
}

// remember keeps a catalog's content for merging.
func (r *Reconciler) remember(cat *v1alpha1.Catalog, index *catalog.Index) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.indexes == nil {
		r.indexes = map[string]catalog.CatalogIndex{}
	}
	r.indexes[cat.Name] = catalog.CatalogIndex{Name: cat.Name, Priority: cat.Spec.Priority, Packages: index.Packages}
}

// upToDate reports whether the last sync, for this generation, already
// produced the Extensions of this exact index.
func (r *Reconciler) upToDate(cat *v1alpha1.Catalog, index *catalog.Index) bool {
	ready := meta.FindStatusCondition(cat.Status.Conditions, v1alpha1.ConditionReady)
	return cat.Status.ArtifactDigest == index.Digest &&
		cat.Status.ObservedGeneration == cat.Generation &&
		ready != nil && ready.Status == metav1.ConditionTrue
}

// syncExtensions rewrites, from the merged content of every catalog, the
// Extensions that catalog name offers now (index; nil for a deleted
// catalog) or supplied before. It writes only what differs and returns how
// many of index's packages it wrote and which it could not, because an
// Extension of that name was written by hand.
func (r *Reconciler) syncExtensions(ctx context.Context, name string, index *catalog.Index) (int, []string, error) {
	var mine v1alpha1.ExtensionList
	if err := r.Client.List(ctx, &mine, client.HasLabels{CatalogLabel(name)}); err != nil {
		return 0, nil, err
	}
	names := map[string]bool{}
	for _, ext := range mine.Items {
		names[ext.Name] = true
	}
	if index != nil {
		for _, pkg := range index.Packages {
			names[pkg.Name] = true
		}
	}
	inputs, err := r.mergeInputs(ctx, names)
	if err != nil {
		return 0, nil, err
	}
	merged := r.Sources.Merge(inputs)

	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	written := 0
	var conflicts []string
	for _, extName := range sorted {
		spec, ok := merged[extName]
		var specPtr *v1alpha1.ExtensionSpec
		if ok {
			specPtr = &spec
		}
		handWritten, err := r.writeExtension(ctx, extName, specPtr)
		if err != nil {
			return 0, nil, err
		}
		switch {
		case handWritten:
			conflicts = append(conflicts, extName)
		case ok && offers(index, extName):
			written++
		}
	}
	return written, conflicts, nil
}

func offers(index *catalog.Index, name string) bool {
	if index == nil {
		return false
	}
	_, found := slices.BinarySearchFunc(index.Packages, name, func(p catalog.Package, n string) int { return strings.Compare(p.Name, n) })
	return found
}

// mergeInputs returns the content of every live catalog, restricted to the
// given extension names. A catalog not synced since this manager started
// is represented by the versions it supplies in the existing Extensions.
func (r *Reconciler) mergeInputs(ctx context.Context, names map[string]bool) ([]catalog.CatalogIndex, error) {
	var cats v1alpha1.CatalogList
	if err := r.Client.List(ctx, &cats); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var inputs []catalog.CatalogIndex
	var unknown []*v1alpha1.Catalog
	for i := range cats.Items {
		c := &cats.Items[i]
		if !c.DeletionTimestamp.IsZero() {
			continue
		}
		idx, ok := r.indexes[c.Name]
		if !ok {
			unknown = append(unknown, c)
			continue
		}
		idx.Priority = c.Spec.Priority
		in := catalog.CatalogIndex{Name: idx.Name, Priority: idx.Priority}
		for _, p := range idx.Packages {
			if names[p.Name] {
				in.Packages = append(in.Packages, p)
			}
		}
		inputs = append(inputs, in)
	}
	for _, c := range unknown {
		in := catalog.CatalogIndex{Name: c.Name, Priority: c.Spec.Priority}
		for n := range names {
			ext := &v1alpha1.Extension{}
			if err := r.Client.Get(ctx, client.ObjectKey{Name: n}, ext); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, err
			}
			if _, ok := ext.Labels[CatalogLabel(c.Name)]; !ok {
				continue
			}
			pkg := catalog.Package{Name: n, Spec: *ext.Spec.DeepCopy()}
			pkg.Spec.Versions = slices.DeleteFunc(pkg.Spec.Versions, func(v v1alpha1.ExtensionVersion) bool { return v.Source.Catalog != c.Name })
			in.Packages = append(in.Packages, pkg)
		}
		inputs = append(inputs, in)
	}
	return inputs, nil
}

// writeExtension makes Extension name match spec (nil: no catalog offers
// it any more, delete it). It reports whether the Extension is hand-written
// (no catalog label), in which case it is left alone.
func (r *Reconciler) writeExtension(ctx context.Context, name string, spec *v1alpha1.ExtensionSpec) (bool, error) {
	ext := &v1alpha1.Extension{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ext)
	if apierrors.IsNotFound(err) {
		if spec == nil {
			return false, nil
		}
		ext = &v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labelsFor(nil, spec)}, Spec: *spec}
		return false, r.Client.Create(ctx, ext)
	}
	if err != nil {
		return false, err
	}
	if !managed(ext) {
		return true, nil
	}
	if spec == nil {
		return false, client.IgnoreNotFound(r.Client.Delete(ctx, ext))
	}
	labels := labelsFor(ext.Labels, spec)
	owners := slices.DeleteFunc(slices.Clone(ext.OwnerReferences), func(o metav1.OwnerReference) bool {
		return o.Kind == "Catalog" && strings.HasPrefix(o.APIVersion, v1alpha1.GroupVersion.Group+"/")
	})
	if equality.Semantic.DeepEqual(ext.Spec, *spec) && equality.Semantic.DeepEqual(ext.Labels, labels) && len(owners) == len(ext.OwnerReferences) {
		return false, nil
	}
	ext.Spec, ext.Labels, ext.OwnerReferences = *spec, labels, owners
	return false, r.Client.Update(ctx, ext)
}

// managed reports whether a catalog wrote ext (older Annex versions used
// the single annex.dev/catalog label).
func managed(ext *v1alpha1.Extension) bool {
	for k := range ext.Labels {
		if strings.HasPrefix(k, LabelPrefix) || k == v1alpha1.LabelCatalog {
			return true
		}
	}
	return false
}

// labelsFor returns existing labels with the catalog labels replaced by
// those of the catalogs supplying spec's versions; annex.dev/catalog names
// the catalog supplying the highest version.
func labelsFor(existing map[string]string, spec *v1alpha1.ExtensionSpec) map[string]string {
	out := map[string]string{}
	for k, v := range existing {
		if !strings.HasPrefix(k, LabelPrefix) && k != v1alpha1.LabelCatalog {
			out[k] = v
		}
	}
	for _, v := range spec.Versions {
		out[CatalogLabel(v.Source.Catalog)] = ""
	}
	if len(spec.Versions) > 0 {
		out[v1alpha1.LabelCatalog] = spec.Versions[0].Source.Catalog
	}
	return out
}

// CatalogLabel is the label key marking an Extension that catalog name
// supplies. A label name holds at most 63 characters; longer catalog
// names are shortened with a hash to stay unique.
func CatalogLabel(name string) string {
	if len(name) <= 63 {
		return LabelPrefix + name
	}
	sum := sha256.Sum256([]byte(name))
	return LabelPrefix + strings.TrimRight(name[:50], ".-") + "-" + hex.EncodeToString(sum[:])[:12]
}

// patchStatus writes the status if it changed, and tells what changed
// in Events (see transitions).
func (r *Reconciler) patchStatus(ctx context.Context, written, cat *v1alpha1.Catalog) error {
	if equality.Semantic.DeepEqual(written.Status, cat.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, cat, client.MergeFrom(written)); err != nil {
		return err
	}
	for _, n := range transitions(written.Status, cat.Status) {
		log.FromContext(ctx).Info(n.message, "event", n.reason, "type", n.eventType, "catalog", cat.Name)
		if r.Events != nil {
			r.Events.Eventf(cat, nil, n.eventType, n.reason, "Sync", "%s", n.message)
		}
	}
	return nil
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
		msg += fmt.Sprintf("; not written because an Extension of the same name was written by hand: %s", strings.Join(conflicts, ", "))
	}
	return msg
}

// setFetchFailed sets or clears the FetchFailed condition. Its message
// keeps the time of the first failure, so it stays the same across retries
// of one outage.
func setFetchFailed(cat *v1alpha1.Catalog, index *catalog.Index, now time.Time) {
	if index.Stale == nil {
		meta.RemoveStatusCondition(&cat.Status.Conditions, ConditionFetchFailed)
		return
	}
	since := now
	if c := meta.FindStatusCondition(cat.Status.Conditions, ConditionFetchFailed); c != nil && c.Status == metav1.ConditionTrue {
		since = c.LastTransitionTime.Time
	}
	msg := fmt.Sprintf("%s: unreachable since %s; serving the content of %s (%v)",
		sourceField(cat), since.UTC().Format(time.RFC3339), index.FetchedAt.UTC().Format(time.RFC3339), index.Stale)
	if c := meta.FindStatusCondition(cat.Status.Conditions, ConditionFetchFailed); c != nil && c.Status == metav1.ConditionTrue {
		// Keep the first failure's wording; a later error may differ in
		// details such as a port.
		if strings.Contains(c.Message, "unreachable since "+since.UTC().Format(time.RFC3339)) {
			msg = c.Message
		}
	}
	meta.SetStatusCondition(&cat.Status.Conditions, metav1.Condition{
		Type: ConditionFetchFailed, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonFetchFailed,
		Message: msg, ObservedGeneration: cat.Generation, LastTransitionTime: metav1.NewTime(since),
	})
}

func sourceField(cat *v1alpha1.Catalog) string {
	switch s := cat.Spec.Source; {
	case s.Helm != nil:
		return fmt.Sprintf("spec.source.helm.url %s", s.Helm.URL)
	case s.OCI != nil:
		return fmt.Sprintf("spec.source.oci.repository %s", s.OCI.Repository)
	case s.Directory != nil:
		return fmt.Sprintf("spec.source.directory.path %s", s.Directory.Path)
	case s.OLM != nil:
		return "spec.source.olm " + cmp.Or(s.OLM.URL, s.OLM.Path, s.OLM.Image)
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
// and deletion (both move the generation), on a new value of the
// annotation annex.dev/sync-requested-at (annexctl catalog sync), and on
// its own schedule (RequeueAfter).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	syncRequested := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[v1alpha1.AnnotationSyncRequestedAt] != e.ObjectNew.GetAnnotations()[v1alpha1.AnnotationSyncRequestedAt]
	}}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Catalog{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, syncRequested))).
		Named("catalog").
		Complete(r)
}
