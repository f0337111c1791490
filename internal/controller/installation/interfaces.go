package installation

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/gate"
	"github.com/annex-platform/annex/internal/kubeapis"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/render"
	"github.com/annex-platform/annex/internal/resolve"
)

// The controller owns the interfaces it needs; internal/manager wires
// the implementations. The types they exchange (resolve.Problem, render.Input,
// gate.HookChange) are plain values. Revision records are the exception:
// internal/record's codec is pure and its Store keeps Secrets of the hub
// through the controller's own clients, so the controller uses it directly
// and decides which records to write, keep and delete itself (records.go).

// Resolver chooses versions for every installation of one cluster
// together, over the Extensions on offer.
type Resolver interface {
	// Solve returns the plan; installations that cannot be satisfied are in
	// Plan.Failed with an explanation.
	Solve(extensions []v1alpha1.Extension, problem resolve.Problem) *resolve.Plan
}

// Fetcher downloads an artifact and verifies its digest.
type Fetcher interface {
	FetchArtifact(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error)
	// FetchBundle returns an operator bundle's registry+v1 tree
	// (metadata/annotations.yaml, manifests/...) by path.
	FetchBundle(ctx context.Context, src v1alpha1.ArtifactSource) (map[string][]byte, error)
}

// Fence admits work on a cluster only while this manager's shard of
// managers serves it (internal/shard's Fence); a cluster being handed over
// to another shard waits until the work under way has ended.
type Fence interface {
	// Enter admits a reconcile that may write to cluster ("" is the hub)
	// and returns the function that ends it. ok false: another shard
	// serves the cluster, or nobody does while it is handed over, and the
	// reconcile must not touch it; err: try again.
	Enter(ctx context.Context, cluster string) (leave func(), ok bool, err error)
	// Owns reports whether the cluster is this shard's by its label or
	// served by it; it admits nothing.
	Owns(ctx context.Context, cluster string) bool
}

// Hooks asks the registered Hooks about a change within the
// installation's reconcile (internal/hookrequest): it makes the change's
// HookRequest and the hooks' resources, reads their answers and records
// them in the request's status.
type Hooks interface {
	// Ask asks the Hooks that select the change's installation for its
	// event and returns their verdict, waiting a little for answers to
	// the resources it has just created. A zero outcome's Request: no
	// Hook selects the change. Errors are the API server's, unwrapped.
	Ask(ctx context.Context, change gate.HookChange) (gate.HookOutcome, error)
	// WakeThrough hands over the installation controller, once, before
	// it starts: a later answer (any change of a hook's resource)
	// enqueues, through it, the installation the resource was made for.
	WakeThrough(c controller.Controller)
}

// Renderer turns an artifact and values into objects. It performs no I/O.
type Renderer interface {
	Render(in render.Input) (*render.Result, error)
}

// Clusters gives access to the cluster an installation targets.
type Clusters interface {
	// Target returns the cluster named by spec.cluster ("" is the cluster
	// Annex runs in). Errors are retried.
	Target(ctx context.Context, name string) (Target, error)
}

// Target is one cluster: its Kubernetes version and an applier for it.
type Target interface {
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
	Applier() Applier
	// ApplierAs returns an applier whose requests impersonate user.
	ApplierAs(user string) (Applier, error)
}

// Applier writes objects into one cluster.
type Applier interface {
	// Refs returns the inventory entries Apply would record for objects,
	// without writing anything.
	Refs(objects []*unstructured.Unstructured, defaultNamespace string) []v1alpha1.ObjectReference
	// Apply applies a rendered set in phases (hooks included unless
	// opts.SkipHooks) and returns the inventory and its health as the
	// apply left it. On an error the inventory lists what was applied.
	Apply(ctx context.Context, owner Owner, defaultNamespace string, set Set, opts ApplyOptions) (Applied, error)
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
	// Plan is the state of the apply's plan (a chart's phases and hooks as
	// steps), when it ran through the plan executor.
	Plan *v1alpha1.PlanStatus
}

// Set is a rendered set of objects. For a package it is the state its
// plans leave, and Package holds what the package engine needs later (the
// parameters, the cleanup plan), opaque to everything else.
type Set struct {
	CRDs, Objects []*unstructured.Unstructured
	Package       []byte
}

// ApplyOptions tune one Apply.
type ApplyOptions struct {
	// IsUpgrade runs the upgrade hooks instead of the install hooks.
	IsUpgrade bool
	// SkipHooks applies the regular objects only (drift correction).
	SkipHooks bool
	// HookTimeout bounds each hook Job.
	HookTimeout time.Duration
	// TakeOwnership adopts existing objects and fields of other managers.
	TakeOwnership bool
}

// Drift is one object that differs from the installed revision.
type Drift struct {
	Object  v1alpha1.ObjectReference
	Missing bool
	Fields  []string
}

// Owner names the installation that owns applied objects.
type Owner struct{ Name, Namespace string }

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
