package adopt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
	"github.com/annex-platform/annex/internal/news"
)

// The first install of an installation that names what another tool
// installed (spec.adopt) takes it over in place instead of creating it.
// Plan decides, from what Source reads on the target cluster, whether it
// may and what is taken over (a Takeover); the installation controller
// applies the render with the Takeover's hand-over, records revision 1
// with Record, notes AdoptedFrom in the status, and retires the other
// tool's bookkeeping last.

// DefaultHandOver are the field managers whose fields an adoption of a
// Helm release takes over when spec.adopt.helm.fieldManagers is empty:
// the Helm CLI's and Flux's helm-controller's.
var DefaultHandOver = []string{"helm", "helm-controller"}

// DefaultOLMHandOver are the field managers whose fields an adoption of
// an OLM operator takes over when spec.adopt.olm.fieldManagers is empty:
// OLM v0's olm-operator and catalog-operator, named after their binaries.
var DefaultOLMHandOver = []string{"olm", "catalog"}

// KindHelmRelease is status.adoptedFrom.kind of a Helm release;
// KindSubscription that of an OLM operator.
const (
	KindHelmRelease  = "HelmRelease"
	KindSubscription = "Subscription"
)

// Source reads, on the target cluster, what an adoption takes over (the
// target cluster's applier implements it). Its errors are the cluster's
// and are retried.
type Source interface {
	// HelmRelease returns the revisions of Helm release name stored in
	// namespace, and the storage driver they were read from.
	HelmRelease(ctx context.Context, namespace, name string) (revisions []*Release, driver string, err error)
	// Live returns the live objects of objects (placed in
	// defaultNamespace when they name none) that exist.
	Live(ctx context.Context, defaultNamespace string, objects []*unstructured.Unstructured) ([]*unstructured.Unstructured, error)
	// OLMOperator returns the operator of Subscription namespace/name,
	// nil when there is no such Subscription.
	OLMOperator(ctx context.Context, namespace, name string) (*Operator, error)
}

// Takeover is what an installation's first install takes over: a Helm
// release or an OLM operator, and the field managers that hand theirs
// over.
type Takeover struct {
	Release          *Release
	Operator         *Operator
	StorageNamespace string
	// Managers are the other tool's field managers whose fields Annex's
	// apply takes over.
	Managers []string
	// Compared is the render against the release's live objects.
	Compared Comparison
}

// Refusal is why an installation may not adopt what spec.adopt names,
// phrased with what to do. Retry: the cluster did not answer, and the
// same adoption may succeed later; otherwise the user must change the
// spec or the cluster.
type Refusal struct {
	Retry   bool
	Message string
}

func (e *Refusal) Error() string { return e.Message }

// Stop is how an adoption refused with err stops the installation
// (reason AdoptionRefused): retried when the refusal may pass (Retry),
// terminal otherwise; nil when err is no Refusal.
func Stop(err error) *news.Stop {
	var no *Refusal
	switch {
	case !errors.As(err, &no):
		return nil
	case no.Retry:
		return &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonAdoptionRefused, Message: no.Message}
	}
	return &news.Stop{Kind: news.Terminal, Reason: v1alpha1.ReasonAdoptionRefused, Message: no.Message}
}

func refused(format string, args ...any) *Refusal {
	return &Refusal{Message: fmt.Sprintf(format, args...)}
}

func retried(format string, args ...any) *Refusal {
	return &Refusal{Retry: true, Message: fmt.Sprintf(format, args...)}
}

// Adopting reports whether inst adopts a Helm release on its first
// install: it names one and no revision is recorded yet.
func Adopting(inst *v1alpha1.ExtensionInstallation) bool {
	return inst.Spec.Adopt != nil && inst.Spec.Adopt.Helm != nil && len(inst.Status.History) == 0
}

// AdoptingOperator reports whether inst adopts an OLM operator on its
// first install.
func AdoptingOperator(inst *v1alpha1.ExtensionInstallation) bool {
	return inst.Spec.Adopt != nil && inst.Spec.Adopt.OLM != nil && len(inst.Status.History) == 0
}

// Rendered is what the engine made of the installation's chosen version,
// as far as adoption needs it.
type Rendered struct {
	// Objects are the rendered objects, CRDs first.
	Objects []*unstructured.Unstructured
	// Resumable: the release runs resumable plans (a package or a
	// bundle), not a chart's one-pass plan.
	Resumable bool
}

// Plan reads and checks what inst.Spec.Adopt names, before anything is
// written: nil when inst adopts nothing (now), a *Refusal when it may
// not, each saying what to do. self is the installation and where its
// cluster, in messages.
func Plan(ctx context.Context, src Source, inst *v1alpha1.ExtensionInstallation, self Installation, where string, r Rendered) (*Takeover, error) {
	switch {
	case AdoptingOperator(inst):
		return planOperator(ctx, src, inst.Spec.Adopt.OLM, self, where, r)
	case Adopting(inst):
		return planRelease(ctx, src, inst.Spec.Adopt.Helm, self, where, r)
	}
	return nil, nil
}

// planRelease reads and checks the Helm release h names: its deployed
// revision, of the installation's chart, version and namespace, whose
// objects no other installation holds, rendered as a one-pass chart.
func planRelease(ctx context.Context, src Source, h *v1alpha1.HelmReleaseAdoption, self Installation, where string, r Rendered) (*Takeover, error) {
	storageNS := cmp.Or(h.StorageNamespace, self.TargetNamespace)
	revisions, driver, err := src.HelmRelease(ctx, storageNS, h.Release)
	if err != nil {
		return nil, retried("spec.adopt.helm: reading Helm release %s/%s on %s: %v", storageNS, h.Release, where, err)
	}
	if len(revisions) == 0 {
		return nil, refused(
			"spec.adopt.helm: there is no Helm release %q in namespace %s of %s (no Secret or ConfigMap labelled owner=helm,name=%s); check spec.adopt.helm.release and storageNamespace, or remove spec.adopt to install afresh",
			h.Release, storageNS, where, h.Release)
	}
	rel, err := Deployed(revisions, driver)
	if err != nil {
		return nil, refused("spec.adopt.helm: %s", err.Error())
	}
	if err := Check(rel, self); err != nil {
		return nil, refused("spec.adopt.helm: %s", err.Error())
	}
	if r.Resumable {
		return nil, refused(
			"spec.adopt.helm: %s %s is not a Helm chart applied in one pass; a Helm release can only be adopted as the chart it was installed from",
			self.Extension, self.Version)
	}
	live, err := src.Live(ctx, self.TargetNamespace, r.Objects)
	if err != nil {
		return nil, retried("spec.adopt.helm: reading the objects of Helm release %s/%s on %s: %v", rel.Namespace, rel.Name, where, err)
	}
	if foreign := Foreign(live, self); len(foreign) > 0 {
		return nil, refused(
			"spec.adopt.helm: Helm release %s/%s has objects of another installation: %s; an object is adopted by one installation only: delete that installation (or remove the object from it) first",
			rel.Namespace, rel.Name, strings.Join(foreign, ", "))
	}
	t := &Takeover{
		Release: rel, StorageNamespace: storageNS,
		Managers: h.FieldManagers,
		Compared: Compare(placed(r.Objects, live), live, nil),
	}
	if len(t.Managers) == 0 {
		t.Managers = DefaultHandOver
	}
	return t, nil
}

// planOperator reads and checks the OLM Subscription o names, and its
// CSV: the bundle's plans then run with the operator's objects handed
// over.
func planOperator(ctx context.Context, src Source, o *v1alpha1.OLMOperatorAdoption, self Installation, where string, r Rendered) (*Takeover, error) {
	ns := self.TargetNamespace
	op, err := src.OLMOperator(ctx, ns, o.Subscription)
	if err != nil {
		return nil, retried("spec.adopt.olm: reading Subscription %s/%s on %s: %v", ns, o.Subscription, where, err)
	}
	if op == nil {
		return nil, refused(
			"spec.adopt.olm: there is no Subscription %q (operators.coreos.com/v1alpha1) in namespace %s of %s; check spec.adopt.olm.subscription and spec.targetNamespace, or remove spec.adopt to install afresh",
			o.Subscription, ns, where)
	}
	if err := CheckOperator(op, self); err != nil {
		return nil, refused("spec.adopt.olm: %s", err.Error())
	}
	if !r.Resumable {
		return nil, refused(
			"spec.adopt.olm: %s %s is not an operator bundle (engine Bundle); an OLM operator is adopted as its bundle from an olm Catalog",
			self.Extension, self.Version)
	}
	t := &Takeover{Operator: op, Managers: o.FieldManagers}
	if len(o.FieldManagers) == 0 {
		t.Managers = DefaultOLMHandOver
	}
	return t, nil
}

// placed returns copies of rendered with the namespace of the live object
// of the same name and kind, for Compare: the applier placed live.
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

// Objects returns what an adoption applies of objects: the hooks are
// left out (Helm ran them). A nil Takeover returns objects.
func (t *Takeover) Objects(objects []*unstructured.Unstructured) []*unstructured.Unstructured {
	if t == nil {
		return objects
	}
	return slices.DeleteFunc(slices.Clone(objects), IsHook)
}

// HandOver says how an apply of t writes: existing objects are taken
// over (take), the other tool's field managers hand theirs over
// (managers), and a Helm release's objects that match the render are not
// written at all (deferred): status.adoptedObjects lists them, and the
// first revision or drift correction that changes one claims it. An OLM
// operator's are, as its retirement writes them anyway. A nil Takeover
// takes nothing over.
func (t *Takeover) HandOver() (take bool, managers []string, deferred bool) {
	if t == nil {
		return false, nil, false
	}
	return true, t.Managers, t.Release != nil
}

// From is status.adoptedFrom of the revision that adopted t, recorded at
// at.
func (t *Takeover) From(at metav1.Time) *v1alpha1.AdoptedFrom {
	if op := t.Operator; op != nil {
		return &v1alpha1.AdoptedFrom{
			Kind: KindSubscription, Name: op.Subscription, Namespace: op.Namespace,
			Chart: op.Package, Version: op.Version, ClusterServiceVersion: op.CSV, At: at,
		}
	}
	rel := t.Release
	from := &v1alpha1.AdoptedFrom{
		Kind: KindHelmRelease, Name: rel.Name, Namespace: rel.Namespace, Revision: int64(rel.Revision),
		Chart: rel.Chart, Version: rel.ChartVersion, At: at,
	}
	if t.StorageNamespace != rel.Namespace {
		from.StorageNamespace = t.StorageNamespace
	}
	return from
}

// News is the message of the Event that tells of t's adoption.
func (t *Takeover) News() string {
	if op := t.Operator; op != nil {
		return fmt.Sprintf("adopted operator %s %s of OLM Subscription %s/%s (ClusterServiceVersion %s) in place",
			op.Package, op.Version, op.Namespace, op.Subscription, op.CSV)
	}
	rel := t.Release
	hooks := ""
	switch {
	case rel.Hooks == 1:
		hooks = "; its Helm hook was not run again"
	case rel.Hooks > 1:
		hooks = fmt.Sprintf("; its %d Helm hooks were not run again", rel.Hooks)
	}
	return fmt.Sprintf("adopted Helm release %s/%s revision %d (%s %s) in place: %s%s",
		rel.Namespace, rel.Name, rel.Revision, rel.Chart, rel.ChartVersion, t.Compared.Summary(), hooks)
}

// AdoptedByOthers maps the UIDs of the objects that the installations
// other than self adopted without writing them (status.adoptedObjects)
// to those installations ("namespace/name" as their labels say): such an
// object carries no labels, yet is theirs. Nil when there are none.
func AdoptedByOthers(installations []*v1alpha1.ExtensionInstallation, self types.NamespacedName) map[types.UID]string {
	var out map[types.UID]string
	for _, other := range installations {
		if len(other.Status.AdoptedObjects) == 0 || (other.Namespace == self.Namespace && other.Name == self.Name) {
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
