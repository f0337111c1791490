// Package target is the contract through which the installation
// controller reaches the cluster an installation targets: a Cluster (its
// Kubernetes version, discovery, CRDs) and its Applier (apply, delete,
// health, hooks, pipes, adoption's reads), with the plain values they
// exchange. internal/manager implements it over internal/cluster and
// internal/apply; the controller knows only this package, so that it
// links no client of a workload cluster: an Applier applies, deletes and
// reads, and decides nothing about plans or revisions.
package target

import (
	"context"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
	"github.com/annex-platform/annex/internal/kubeapis"
	"github.com/annex-platform/annex/internal/plan"
)

// Cluster is one cluster: its Kubernetes version and an applier for it.
type Cluster interface {
	// KubeVersion is the version the cluster's API server reports.
	KubeVersion(ctx context.Context) (string, error)
	// APIVersions lists the cluster's API versions for
	// .Capabilities.APIVersions ("group/version" and
	// "group/version/Kind"), from its discovery, cached.
	APIVersions(ctx context.Context) ([]string, error)
	// NamespaceExists reports whether the cluster has the namespace.
	NamespaceExists(ctx context.Context, name string) (bool, error)
	// ResourceScope reports whether the cluster serves gr (an RBAC
	// rule's group and resource) as namespaced; known is false when it
	// does not serve it. Errors (discovery failing) are retried.
	ResourceScope(ctx context.Context, gr schema.GroupResource) (namespaced, known bool, err error)
	// Serves says whether the cluster serves gvk (its discovery, asked
	// again for a kind it did not know), and, when it does not, which
	// versions of the kind it serves instead. Errors (discovery failing)
	// are retried.
	Serves(ctx context.Context, gvk schema.GroupVersionKind) (kubeapis.Answer, error)
	// CRDs reads the CustomResourceDefinitions names from the cluster,
	// with the cluster's own identity, status included; a name the
	// cluster has none of is absent from the map. Errors are retried.
	CRDs(ctx context.Context, names []string) (map[string]*unstructured.Unstructured, error)
	// MigrateStoredVersions retires the old stored versions of the CRD
	// name, with the cluster's own identity: every object of it written
	// back at its storage version, then status.storedVersions trimmed to
	// that version (internal/crdmigrate). It keeps no state: one that
	// stops half-way is run again from the start. Errors are retried.
	MigrateStoredVersions(ctx context.Context, name string) (StorageMigration, error)
	Applier() Applier
	// ApplierAs returns an applier whose requests impersonate user.
	ApplierAs(user string) (Applier, error)
}

// StorageMigration is what one Cluster.MigrateStoredVersions did.
type StorageMigration struct {
	// StorageVersion is the version the objects were written at.
	StorageVersion string
	// Objects is how many objects were written back.
	Objects int
	// Trimmed are the versions removed from status.storedVersions.
	Trimmed []string
}

// Applier writes objects into one cluster.
type Applier interface {
	// Refs returns the inventory entries Apply would record for objects,
	// without writing anything.
	Refs(objects []*unstructured.Unstructured, defaultNamespace string) []v1alpha1.ObjectReference
	// Apply applies the regular objects of a rendered set in phases
	// (never its hooks) and returns the inventory and its health as the
	// apply left it. On an error the inventory lists what was applied.
	Apply(ctx context.Context, owner Owner, defaultNamespace string, set Set, opts ApplyOptions) (Applied, error)
	// Start starts applying p, a release's one-pass plan (Release.OnePass),
	// hooks included: it checks, before anything is written, that every
	// kind p does not define exists. The controller's driver then runs
	// each step of p with the StepRunner, in plan order.
	Start(owner Owner, defaultNamespace string, p plan.Plan, opts ApplyOptions) (StepRunner, error)
	// Diff lists the objects of set that differ from the cluster, writing
	// nothing, and the health of set's objects as it read them.
	Diff(ctx context.Context, owner Owner, defaultNamespace string, set Set) ([]Drift, Health, error)
	// Prune deletes what is in old but not in current and still owned.
	Prune(ctx context.Context, owner Owner, old, current []v1alpha1.ObjectReference) ([]v1alpha1.ObjectReference, error)
	// RunDeleteHooks runs the pre-delete (post false) or post-delete hooks
	// of set.
	RunDeleteHooks(ctx context.Context, owner Owner, defaultNamespace string, set Set, post bool, timeout time.Duration) error
	// Delete removes the inventory and reports how much still exists.
	Delete(ctx context.Context, owner Owner, inventory []v1alpha1.ObjectReference, deleteCRDs bool) (remaining int, err error)
	// Health reports whether every inventory object is healthy.
	Health(ctx context.Context, inventory []v1alpha1.ObjectReference) (Health, error)
	// RemoveFinalizers removes the finalizers of the objects of refs that
	// carry owner's labels and are being deleted, so that their deletion
	// completes without their controller.
	RemoveFinalizers(ctx context.Context, owner Owner, refs []v1alpha1.ObjectReference) error
	// RunPipe advances a package's Pipe task by one pass: it starts the
	// pod, then, once it runs, copies its files into Secrets or ConfigMaps
	// and deletes it. An error with a Permanent() method returning true
	// cannot succeed as the pipe is written.
	RunPipe(ctx context.Context, owner Owner, defaultNamespace string, p plan.Pipe) (PipeResult, error)
	// Live reads the objects (placed as Apply places them) and returns
	// those that exist, hooks left out; a kind the cluster does not serve
	// has none.
	Live(ctx context.Context, defaultNamespace string, objects []*unstructured.Unstructured) ([]*unstructured.Unstructured, error)
	// HelmRelease reads every revision of a Helm release from its
	// storage in namespace (Secrets, else ConfigMaps: driver "secret" or
	// "configmap"); none when it has none. Undecodable storage is an
	// error naming it.
	HelmRelease(ctx context.Context, namespace, name string) (revisions []*adopt.Release, driver string, err error)
	// RetireHelmRelease deletes the storage of every revision of a Helm
	// release and returns how many objects it deleted.
	RetireHelmRelease(ctx context.Context, namespace, name string) (int, error)
	// OLMOperator reads the OLM v0 Subscription name of namespace, its
	// installed CSV and the InstallPlans that installed it; nil, nil when
	// the Subscription (or OLM's kinds) does not exist.
	OLMOperator(ctx context.Context, namespace, name string) (*adopt.Operator, error)
	// RetireOLMOperator removes the ownerReferences to op's CSV and OLM's
	// olm.owner labels from the objects of inventory, then deletes op's
	// Subscription, InstallPlans and CSV; it returns how many objects it
	// orphaned.
	RetireOLMOperator(ctx context.Context, op *adopt.Operator, inventory []v1alpha1.ObjectReference) (int, error)
}

// StepRunner runs the steps of one release's one-pass plan (Applier.Start).
type StepRunner interface {
	// Step runs the step ref: its objects applied, or its hooks run one at
	// a time, each awaited, with their delete policies. An error is the
	// step's failure.
	Step(ctx context.Context, ref plan.StepRef) error
	// Applied is the inventory of the objects the steps run so far
	// applied, and their health.
	Applied() Applied
}

// PipeResult is what one pass of a Pipe task did.
type PipeResult struct {
	Done bool
	// Message says what the pipe waits for.
	Message string
}

// Applied is what an Apply did: the inventory of the objects applied and
// their health as the server answered the writes.
type Applied struct {
	Inventory []v1alpha1.ObjectReference
	Health    Health
	// Adopted are the objects of Inventory the apply left unwritten for
	// their adoption: recorded in status.adoptedObjects, passed back as
	// Owner.Adopted.
	Adopted []v1alpha1.AdoptedObject
}

// Set is a rendered set of objects. For a package it is the state its
// plans leave, and Package holds what the package engine needs later (the
// parameters, the cleanup plan), opaque to everything else.
type Set struct {
	CRDs, Objects []*unstructured.Unstructured
	Package       []byte
}

// ApplyOptions tune one Apply or Start.
type ApplyOptions struct {
	// HookTimeout bounds each hook Job of a one-pass plan.
	HookTimeout time.Duration
	// TakeOwnership adopts existing objects and fields of other managers.
	TakeOwnership bool
	// HandOver names the field managers (another tool's) whose objects an
	// adoption takes over in place: each is written only as taking it
	// over needs, and their managedFields entries are removed.
	HandOver []string
	// DeferHandOver, with HandOver, leaves unwritten an object that
	// already matches: it is listed in Applied.Adopted and claimed by the
	// first apply that changes it.
	DeferHandOver bool
	// Create expects the objects not to exist yet (an installation's
	// first apply): each is created, and one that exists after all is
	// applied as without Create.
	Create bool
}

// Drift is one object that differs from the installed revision.
type Drift struct {
	Object  v1alpha1.ObjectReference
	Missing bool
	Fields  []string
}

// Owner names the installation that owns applied objects.
type Owner struct {
	Name, Namespace string
	// Adopted are the installation's objects adopted unwritten
	// (status.adoptedObjects): owned by UID, as they carry no labels.
	Adopted []v1alpha1.AdoptedObject
	// AdoptedByOthers maps the UIDs of other installations' objects
	// adopted unwritten to those installations ("namespace/name"), so that
	// an apply refuses them as it refuses objects labelled for another.
	AdoptedByOthers map[types.UID]string
}

// String is "<namespace>/<name>".
func (o Owner) String() string { return o.Namespace + "/" + o.Name }

// Health summarises the health of an inventory.
type Health struct {
	// Total is the number of objects checked.
	Total  int
	Ready  bool
	Failed bool
	// Summary names the objects that are not ready, in stable words.
	Summary string
	// NotReady are the objects that are not ready, in inventory order.
	NotReady []ObjectHealth
}

// ObjectHealth is the health of one object that is not ready.
type ObjectHealth struct {
	Object v1alpha1.ObjectReference
	// Status is a kstatus status: InProgress, Failed, Terminating,
	// NotFound or Unknown.
	Status string
	// Message is the object's own account: its condition's reason and
	// message, or the finalizers it waits for.
	Message string
}

// UnionRefs returns old plus every ref of add not in old (by Identity),
// sorted by RefKey, and whether anything was added.
func UnionRefs(old, add []v1alpha1.ObjectReference) ([]v1alpha1.ObjectReference, bool) {
	seen := map[v1alpha1.ObjectReference]bool{}
	out := make([]v1alpha1.ObjectReference, 0, len(old)+len(add))
	for _, ref := range old {
		seen[Identity(ref)] = true
		out = append(out, ref)
	}
	grew := false
	for _, ref := range add {
		if !seen[Identity(ref)] {
			seen[Identity(ref)] = true
			out = append(out, ref)
			grew = true
		}
	}
	sort.Slice(out, func(i, j int) bool { return RefKey(out[i]) < RefKey(out[j]) })
	return out, grew
}

// Identity drops the version and the resourceVersion: the same object may
// be recorded under two versions of its kind, and at two resourceVersions.
func Identity(ref v1alpha1.ObjectReference) v1alpha1.ObjectReference {
	ref.Version, ref.ResourceVersion = "", ""
	return ref
}

// RefKey is "<group>/<kind>/<namespace>/<name>", one object's key in an
// inventory whatever the version it was recorded under.
func RefKey(ref v1alpha1.ObjectReference) string {
	return ref.Group + "/" + ref.Kind + "/" + ref.Namespace + "/" + ref.Name
}

// Adopting is o for an apply that adopts t (adopt.Takeover.HandOver):
// existing objects are taken over, the other tool's field managers hand
// theirs over, and a release's objects that match are deferred. o when t
// is nil.
func (o ApplyOptions) Adopting(t *adopt.Takeover) ApplyOptions {
	if take, managers, deferred := t.HandOver(); take {
		o.TakeOwnership, o.HandOver, o.DeferHandOver = true, managers, deferred
	}
	return o
}
