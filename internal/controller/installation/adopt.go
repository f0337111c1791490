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
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
	"github.com/annex-platform/annex/internal/names"
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
//     Helm installed the release) and with ApplyOptions.HandOver and
//     DeferHandOver: each object keeps its UID; one that matches the
//     render is not written at all — status.adoptedObjects lists it, the
//     installation owns it by UID (Owner.Adopted), and the first revision
//     or drift correction that changes it claims it, Helm's field managers
//     losing their fields to Annex's then; one that differs is claimed and
//     corrected at once. Revision 1's record keeps the release's last
//     manifest; the status says where the installation came from
//     (status.adoptedFrom).
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

// DefaultOLMHandOver are the field managers whose fields an adoption of
// an OLM operator takes over when spec.adopt.olm.fieldManagers is empty:
// OLM v0's olm-operator and catalog-operator, named after their binaries.
var DefaultOLMHandOver = []string{"olm", "catalog"}

// adoption is what this reconcile takes over: a Helm release or an OLM
// operator.
type adoption struct {
	release          *adopt.Release
	operator         *adopt.Operator
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
	if adoptingOperator(inst) {
		return r.adoptOperator(ctx, s)
	}
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

// adoptingOperator reports whether inst adopts an OLM operator on its
// first install.
func adoptingOperator(inst *v1alpha1.ExtensionInstallation) bool {
	return inst.Spec.Adopt != nil && inst.Spec.Adopt.OLM != nil && len(inst.Status.History) == 0
}

// adoptOperator reads and checks the OLM Subscription spec.adopt.olm
// names, and its CSV, before anything is written: the bundle's plans then
// run with the operator's objects handed over (see the top of this file).
func (r *Reconciler) adoptOperator(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	o := inst.Spec.Adopt.OLM
	ns, where := s.targetNamespace(), clusterName(inst.Spec.Cluster)
	op, err := s.target.Applier().OLMOperator(ctx, ns, o.Subscription)
	if err != nil {
		return r.stop(s, retry(v1alpha1.ReasonAdoptionRefused, fmt.Sprintf("spec.adopt.olm: reading Subscription %s/%s on %s: %v", ns, o.Subscription, where, err)), ctrl.Result{})
	}
	if op == nil {
		return r.stop(s, terminal(v1alpha1.ReasonAdoptionRefused, fmt.Sprintf(
			"spec.adopt.olm: there is no Subscription %q (operators.coreos.com/v1alpha1) in namespace %s of %s; check spec.adopt.olm.subscription and spec.targetNamespace, or remove spec.adopt to install afresh",
			o.Subscription, ns, where)), ctrl.Result{})
	}
	self := adopt.Installation{
		Extension: inst.Spec.Extension, Version: s.choice.Version.Version, TargetNamespace: ns,
		Name: inst.Name, Namespace: inst.Namespace,
	}
	if err := adopt.CheckOperator(op, self); err != nil {
		return r.stop(s, terminal(v1alpha1.ReasonAdoptionRefused, "spec.adopt.olm: "+err.Error()), ctrl.Result{})
	}
	if !s.artifact.release.Resumable() {
		return r.stop(s, terminal(v1alpha1.ReasonAdoptionRefused, fmt.Sprintf(
			"spec.adopt.olm: %s %s is not an operator bundle (engine Bundle); an OLM operator is adopted as its bundle from an olm Catalog",
			inst.Spec.Extension, s.choice.Version.Version)), ctrl.Result{})
	}
	s.artifact.adoption = &adoption{operator: op, managers: o.FieldManagers}
	if len(o.FieldManagers) == 0 {
		s.artifact.adoption.managers = DefaultOLMHandOver
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
	return slices.DeleteFunc(slices.Clone(objects), adopt.IsHook), a.options(opts)
}

// options are opts for an apply of an adoption: existing objects are
// taken over, and the other tool's field managers hand theirs over. A
// Helm release's objects that match the render are not written at all
// (DeferHandOver): status.adoptedObjects lists them, and the first
// revision or drift correction that changes one claims it. An OLM
// operator's are, as retireOperator writes them anyway.
func (a *adoption) options(opts ApplyOptions) ApplyOptions {
	if a != nil {
		opts.TakeOwnership, opts.HandOver = true, a.managers
		opts.DeferHandOver = a.release != nil
	}
	return opts
}

// adoptedByOthers maps the UIDs of the objects that the other
// installations on s's cluster adopted without writing them
// (status.adoptedObjects) to those installations, for Owner: such an
// object carries no labels, yet is theirs. Nil when there are none.
func (s *scope) adoptedByOthers() map[types.UID]string {
	if s.cluster == nil {
		return nil
	}
	var out map[types.UID]string
	for _, other := range s.cluster.installations {
		if len(other.Status.AdoptedObjects) == 0 || (other.Namespace == s.inst.Namespace && other.Name == s.inst.Name) {
			continue
		}
		if out == nil {
			out = map[types.UID]string{}
		}
		for _, o := range other.Status.AdoptedObjects {
			out[o.UID] = other.Namespace + "/" + names.LabelValue(other.Name)
		}
	}
	return out
}

// recordOf is what revision 1's record keeps of the release.
func (a *adoption) recordOf() *record.Adopted {
	if a == nil {
		return nil
	}
	if op := a.operator; op != nil {
		return &record.Adopted{Kind: adoptedOperatorKind, Name: op.Subscription, Namespace: op.Namespace, Chart: op.Package, Version: op.Version}
	}
	rel := a.release
	return &record.Adopted{
		Kind: adoptedKind, Name: rel.Name, Namespace: rel.Namespace, StorageNamespace: a.storageNamespace,
		Revision: int64(rel.Revision), Chart: rel.Chart, Version: rel.ChartVersion, Manifest: rel.Manifest,
	}
}

// adoptedKind is status.adoptedFrom.kind of a Helm release;
// adoptedOperatorKind that of an OLM operator.
const (
	adoptedKind         = "HelmRelease"
	adoptedOperatorKind = "Subscription"
)

// adopted notes in the status that the revision just recorded adopted
// the release, and tells it in an Event.
func (r *Reconciler) adopted(s *scope) {
	a := s.artifact.adoption
	if a == nil {
		return
	}
	if op := a.operator; op != nil {
		s.inst.Status.AdoptedFrom = &v1alpha1.AdoptedFrom{
			Kind: adoptedOperatorKind, Name: op.Subscription, Namespace: op.Namespace,
			Chart: op.Package, Version: op.Version, ClusterServiceVersion: op.CSV, At: metav1.NewTime(r.now()),
		}
		r.event(s, corev1.EventTypeNormal, "Adopted", fmt.Sprintf("adopted operator %s %s of OLM Subscription %s/%s (ClusterServiceVersion %s) in place",
			op.Package, op.Version, op.Namespace, op.Subscription, op.CSV))
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
	if from.Kind == adoptedOperatorKind {
		return r.retireOperator(ctx, s)
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

// retireOperator, once revision 1 of an adopted OLM operator is
// recorded, takes the operator's objects from OLM (their ownerReferences
// to the CSV and OLM's olm.owner labels go) and then deletes the
// Subscription, its InstallPlans and the CSV, so that OLM neither
// removes nor reinstalls the operator; its custom resources are not
// touched. It notes it in status.adoptedFrom.storageRemoved.
func (r *Reconciler) retireOperator(ctx context.Context, s *scope) (ctrl.Result, error) {
	from := s.inst.Status.AdoptedFrom
	op := &adopt.Operator{Subscription: from.Name, Namespace: from.Namespace, CSV: from.ClusterServiceVersion}
	if a := s.artifact.adoption; a != nil && a.operator != nil {
		op = a.operator
	}
	n, err := s.target.Applier().RetireOLMOperator(ctx, op, s.inst.Status.Inventory)
	if err != nil {
		s.block = retry(v1alpha1.ReasonAdoptionRefused, fmt.Sprintf("taking operator %s over from OLM (Subscription %s/%s, ClusterServiceVersion %s): %v",
			from.Chart, op.Namespace, op.Subscription, op.CSV, err))
		return ctrl.Result{}, s.block
	}
	s.inst.Status.AdoptedFrom.StorageRemoved = true
	r.event(s, corev1.EventTypeNormal, "OLMRetired", fmt.Sprintf(
		"removed the ownerReferences to ClusterServiceVersion %s/%s from %d objects, then deleted Subscription %s/%s, its InstallPlans and the CSV: OLM no longer manages operator %s; its custom resources are untouched",
		op.Namespace, op.CSV, n, op.Namespace, op.Subscription, from.Chart))
	return ctrl.Result{}, nil
}
