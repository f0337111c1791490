package installation

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
	"github.com/annex-platform/annex/internal/record"
)

// Adoption (spec.adopt): the first install of an installation that names
// a Helm release takes the release's objects over in place instead of
// creating them.
//
//   - adoptRelease (after render) reads the release's deployed revision from its
//     storage on the target cluster, refuses a pending one, a release of
//     another chart, version or namespace, and objects of another
//     installation — each as a terminal condition saying what to do —
//     and compares the render with the live objects.
//   - apply then applies the render without its Helm hooks (they ran when
//     Helm installed the release) and with ApplyOptions.HandOver: each
//     object keeps its UID, is written only as taking it over needs, and
//     Helm's field managers lose their fields to Annex's. Revision 1's
//     record keeps the release's last manifest; the status says where the
//     installation came from (status.adoptedFrom).
//   - retireAdopted (after apply), once the status recording revision 1 is
//     written, deletes the release's storage, so that Helm no longer
//     knows it.
//
// The installation pins nothing itself: annexctl adopt helm writes the
// chart's version and the release's values into the spec.

// DefaultHandOver are the field managers whose fields an adoption of a
// Helm release takes over when spec.adopt.helm.fieldManagers is empty:
// the Helm CLI's and Flux's helm-controller's.
var DefaultHandOver = []string{"helm", "helm-controller"}

// adoption is what this reconcile takes over.
type adoption struct {
	release          *adopt.Release
	storageNamespace string
	managers         []string
	compared         adopt.Comparison
}

// adopting reports whether inst adopts something on its first install:
// it names it and no revision is recorded yet.
func adopting(inst *v1alpha1.ExtensionInstallation) bool {
	return inst.Spec.Adopt != nil && inst.Spec.Adopt.Helm != nil && len(inst.Status.History) == 0
}

// adoptRelease reads and checks the Helm release spec.adopt names,
// before anything is written (see the top of this file).
func (r *Reconciler) adoptRelease(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	if !adopting(inst) {
		return ctrl.Result{}, nil
	}
	h := inst.Spec.Adopt.Helm
	storageNS := cmp.Or(h.StorageNamespace, s.targetNamespace())
	where := clusterName(inst.Spec.Cluster)
	applier := s.target.Applier()
	revisions, driver, err := applier.HelmRelease(ctx, storageNS, h.Release)
	if err != nil {
		return r.stop(s, retry(v1alpha1.ReasonAdoptionRefused, fmt.Sprintf("spec.adopt.helm: reading Helm release %s/%s on %s: %v", storageNS, h.Release, where, err)), ctrl.Result{})
	}
	if len(revisions) == 0 {
		return r.stop(s, terminal(v1alpha1.ReasonAdoptionRefused, fmt.Sprintf(
			"spec.adopt.helm: there is no Helm release %q in namespace %s of %s (no Secret or ConfigMap labelled owner=helm,name=%s); check spec.adopt.helm.release and storageNamespace, or remove spec.adopt to install afresh",
			h.Release, storageNS, where, h.Release)), ctrl.Result{})
	}
	rel, err := adopt.Deployed(revisions, driver)
	if err != nil {
		return r.stop(s, terminal(v1alpha1.ReasonAdoptionRefused, "spec.adopt.helm: "+err.Error()), ctrl.Result{})
	}
	self := adopt.Installation{
		Extension: inst.Spec.Extension, Version: s.choice.Version.Version, TargetNamespace: s.targetNamespace(),
		Name: inst.Name, Namespace: inst.Namespace,
	}
	if err := adopt.Check(rel, self); err != nil {
		return r.stop(s, terminal(v1alpha1.ReasonAdoptionRefused, "spec.adopt.helm: "+err.Error()), ctrl.Result{})
	}
	if s.artifact.release.Resumable() {
		return r.stop(s, terminal(v1alpha1.ReasonAdoptionRefused, fmt.Sprintf(
			"spec.adopt.helm: %s %s is not a Helm chart applied in one pass; a Helm release can only be adopted as the chart it was installed from",
			inst.Spec.Extension, s.choice.Version.Version)), ctrl.Result{})
	}
	rendered := slices.Concat(s.artifact.release.CRDs, s.artifact.release.Objects)
	live, err := applier.Live(ctx, s.targetNamespace(), rendered)
	if err != nil {
		return r.stop(s, retry(v1alpha1.ReasonAdoptionRefused, fmt.Sprintf("spec.adopt.helm: reading the objects of Helm release %s/%s on %s: %v", rel.Namespace, rel.Name, where, err)), ctrl.Result{})
	}
	if foreign := adopt.Foreign(live, self); len(foreign) > 0 {
		return r.stop(s, terminal(v1alpha1.ReasonAdoptionRefused, fmt.Sprintf(
			"spec.adopt.helm: Helm release %s/%s has objects of another installation: %s; an object is adopted by one installation only: delete that installation (or remove the object from it) first",
			rel.Namespace, rel.Name, strings.Join(foreign, ", "))), ctrl.Result{})
	}
	s.artifact.adoption = &adoption{
		release: rel, storageNamespace: storageNS,
		managers: h.FieldManagers,
		compared: adopt.Compare(placed(rendered, live), live, nil),
	}
	if len(s.artifact.adoption.managers) == 0 {
		s.artifact.adoption.managers = DefaultHandOver
	}
	return ctrl.Result{}, nil
}

// placed returns copies of rendered with the namespace of the live object
// of the same name and kind, for adopt.Compare: the applier placed live.
func placed(rendered, live []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(rendered))
	for _, o := range rendered {
		c := o.DeepCopy()
		gk := c.GroupVersionKind().GroupKind()
		for _, l := range live {
			if l.GroupVersionKind().GroupKind() == gk && l.GetName() == c.GetName() &&
				(c.GetNamespace() == "" || c.GetNamespace() == l.GetNamespace()) {
				c.SetNamespace(l.GetNamespace())
				break
			}
		}
		out = append(out, c)
	}
	return out
}

// applying changes the apply of an adoption: the hooks are left out
// (Helm ran them), and the objects Helm's managers hold are handed over.
func (a *adoption) applying(objects []*unstructured.Unstructured, opts ApplyOptions) ([]*unstructured.Unstructured, ApplyOptions) {
	if a == nil {
		return objects, opts
	}
	opts.TakeOwnership, opts.HandOver = true, a.managers
	return slices.DeleteFunc(slices.Clone(objects), adopt.IsHook), opts
}

// recordOf is what revision 1's record keeps of the release.
func (a *adoption) recordOf() *record.Adopted {
	if a == nil {
		return nil
	}
	rel := a.release
	return &record.Adopted{
		Kind: adoptedKind, Name: rel.Name, Namespace: rel.Namespace, StorageNamespace: a.storageNamespace,
		Revision: int64(rel.Revision), Chart: rel.Chart, Version: rel.ChartVersion, Manifest: rel.Manifest,
	}
}

// adoptedKind is status.adoptedFrom.kind of a Helm release.
const adoptedKind = "HelmRelease"

// adopted notes in the status that the revision just recorded adopted
// the release, and tells it in an Event.
func (r *Reconciler) adopted(s *scope) {
	a := s.artifact.adoption
	if a == nil {
		return
	}
	rel := a.release
	from := &v1alpha1.AdoptedFrom{
		Kind: adoptedKind, Name: rel.Name, Namespace: rel.Namespace, Revision: int64(rel.Revision),
		Chart: rel.Chart, Version: rel.ChartVersion, At: metav1.NewTime(r.now()),
	}
	if a.storageNamespace != rel.Namespace {
		from.StorageNamespace = a.storageNamespace
	}
	s.inst.Status.AdoptedFrom = from
	hooks := ""
	switch {
	case rel.Hooks == 1:
		hooks = "; its Helm hook was not run again"
	case rel.Hooks > 1:
		hooks = fmt.Sprintf("; its %d Helm hooks were not run again", rel.Hooks)
	}
	r.event(s, corev1.EventTypeNormal, "Adopted", fmt.Sprintf("adopted Helm release %s/%s revision %d (%s %s) in place: %s%s",
		rel.Namespace, rel.Name, rel.Revision, rel.Chart, rel.ChartVersion, a.compared.Summary(), hooks))
}

// retireAdopted deletes the storage of the adopted Helm release once the
// status recording its adoption is written (so that a crash in between
// leaves a release to adopt again, never an installation without either),
// and notes it in status.adoptedFrom.storageRemoved.
func (r *Reconciler) retireAdopted(ctx context.Context, s *scope) (ctrl.Result, error) {
	from := s.inst.Status.AdoptedFrom
	if from == nil || from.StorageRemoved || len(s.inst.Status.History) == 0 {
		return ctrl.Result{}, nil
	}
	if err := r.persist(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	ns := cmp.Or(from.StorageNamespace, from.Namespace)
	n, err := s.target.Applier().RetireHelmRelease(ctx, ns, from.Name)
	if err != nil {
		s.block = retry(v1alpha1.ReasonAdoptionRefused, fmt.Sprintf("deleting the storage of adopted Helm release %s/%s: %v", ns, from.Name, err))
		return ctrl.Result{}, s.block
	}
	// persist decoded the server's answer into the status: from is stale.
	s.inst.Status.AdoptedFrom.StorageRemoved = true
	r.event(s, corev1.EventTypeNormal, "HelmReleaseRetired", fmt.Sprintf(
		"deleted the storage of Helm release %s/%s (%d objects): helm list no longer shows it; its last manifest is in the record of revision 1", ns, from.Name, n))
	return ctrl.Result{}, nil
}
