package installation

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
	"github.com/annex-platform/annex/internal/gate"
	"github.com/annex-platform/annex/internal/kubeapis"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/resolve"
)

// The controller owns the interfaces it needs; internal/manager wires
// the implementations. The types they exchange (resolve.Problem,
// EngineInput and Release, gate.HookChange) are plain values. Revision
// records are the exception: internal/record's codec is pure and its
// Store keeps Secrets of the hub through the controller's own clients, so
// the controller uses it directly and decides which records to write,
// keep and delete itself (records.go).

// Resolver chooses versions for every installation of one cluster
// together, over the Extensions on offer.
type Resolver interface {
	// Solve returns the resolution; installations that cannot be
	// satisfied are in Resolution.Failed with an explanation.
	Solve(extensions []v1alpha1.Extension, problem resolve.Problem) *resolve.Resolution
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

// Verifier checks who signed a version's artifact, as the policy of the
// catalog that supplied it asks (a Catalog's spec.verify), before any
// engine sees it.
type Verifier interface {
	// Verify returns the verification of src's artifact, ref naming it in
	// messages, under its catalog's policy (or the cluster default)
	// tightened by installMode (the installation's spec.verifyMode): nil
	// when no policy asks for any; otherwise the outcome,
	// Verified or not (with its Reason, its message and the policy's
	// Mode), which the controller acts on. Errors (a registry or the API
	// server not answering) are retried.
	Verify(ctx context.Context, ref string, src v1alpha1.ArtifactSource, installMode v1alpha1.VerificationMode) (*v1alpha1.ArtifactVerification, error)
}

// Engine makes releases of one kind of artifact: a Helm chart, an Annex
// package, an OLM registry+v1 bundle. internal/manager wires one Engine
// per engine name (v1alpha1.Engine). An engine decides nothing about what
// runs when: it reads only its input and the facts it asks for, and the
// controller chooses, from the status and the records, what of the
// release to apply.
type Engine interface {
	// Fetch downloads the artifact of src and returns it as the bytes a
	// revision's artifact digest covers (a bundle's tree as its canonical
	// JSON). Errors with Digests() (digestMismatch) or a Permanent()
	// method returning true fail the same way every time; others are
	// retried.
	Fetch(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error)
	// Render makes the release of in.Artifact. An *EngineError is the
	// engine's refusal, phrased for the user; an error of in.Facts is
	// returned as it is; anything else is retried. On an error the
	// release, when not nil, holds what the engine learnt before it
	// (ArtifactDigest, PlanNames).
	Render(ctx context.Context, in EngineInput) (*Release, error)
}

// EngineInput is what an engine makes a release of.
type EngineInput struct {
	// Artifact is what Engine.Fetch returned; ArtifactDigest its digest.
	Artifact       []byte
	ArtifactDigest string
	// Ref names the version in messages, e.g. "podinfo 6.5.0".
	Ref string
	// Name is the installation's name (a chart's release name, a
	// package's instance), Namespace the target namespace.
	Name, Namespace string
	// KubeVersion is the target cluster's Kubernetes version.
	KubeVersion string
	// IsUpgrade: a version is installed already.
	IsUpgrade bool
	// WatchNamespaces and Resources are spec.watchNamespaces and
	// spec.resources (an operator bundle's install mode and custom
	// resources).
	WatchNamespaces []string
	Resources       []v1alpha1.CustomResource
	// WebhookCertificates is spec.webhookCertificates: who issues an
	// operator's serving certificates (nil: Annex).
	WebhookCertificates *v1alpha1.WebhookCertificates
	// Facts answers what the engine needs to know beyond its artifact.
	Facts EngineFacts
}

// EngineFacts are what an engine may read beyond its artifact, each only
// when it needs it, so that an engine that does not ask costs no read.
// Their errors are the controller's (it phrases and classifies them); an
// engine returns them unchanged.
type EngineFacts interface {
	// Values are spec.values merged with spec.valuesFrom.
	Values() (map[string]any, error)
	// APIVersions are the target cluster's API versions
	// ("group/version" and "group/version/Kind").
	APIVersions() ([]string, error)
	// InstalledParams are the effective parameters the installed
	// revision was made with; nil on install.
	InstalledParams() (map[string]any, error)
	// Base chooses the version of the package name that a package
	// extends, within versionRange, among the Extensions on offer.
	Base(name, versionRange string) (v1alpha1.ExtensionVersion, error)
	// Serves reports whether the target cluster serves gvk (its
	// discovery, asked again for a kind it did not know).
	Serves(gvk schema.GroupVersionKind) (bool, error)
	// Secret reads the data of the target cluster's Secret namespace/name
	// (an operator's webhook certificates); nil when there is none.
	Secret(namespace, name string) (map[string][]byte, error)
	// Now is the time certificates are issued and renewed at.
	Now() time.Time
}

// EngineError is an engine's refusal to make a release, phrased for the
// user: the Installed condition says Message, with Reason.
type EngineError struct {
	Reason, Message string
	// Retry: the same input may work next time (a base package that
	// did not download); otherwise it fails the same way every time and
	// the installation stops until its spec or the catalog changes.
	Retry bool
}

func (e *EngineError) Error() string { return e.Message }

// Release is what an engine made of one version's artifact for one
// installation. What differs between engines is data here: the
// controller asks no engine its name.
type Release struct {
	// ArtifactDigest is what the revision records as its artifact
	// digest: the input's, or one over every archive the release was
	// made from (a package and the bases it extends).
	ArtifactDigest string
	// ValuesDigest is the digest of the values the release was made
	// from, when the engine digests them itself (a chart's effective
	// values); Inputs otherwise: the controller digests them, with
	// spec.scopedGrants when set.
	ValuesDigest string
	Inputs       any
	// CRDs and Objects are what a release without Plans applies, in one
	// pass (a chart's crds/ folder and templates, hooks included).
	CRDs, Objects []*unstructured.Unstructured
	// ManifestDigest is the digest of CRDs and Objects.
	ManifestDigest string
	// OnePass, for a release without Plans, makes the plan of its one
	// pass over crds and objects: CRDs and Objects as the controller
	// applies them (the target namespace Annex creates in front, RBAC
	// narrowed by spec.scopedGrants). For a chart, its phases and hook
	// weights as steps: its namespace, CRDs, the pre-install or
	// pre-upgrade hooks by weight, the manifest by kind, the post hooks.
	// The controller's driver runs it within one reconcile, without
	// checkpoints: its steps never wait, and the first error stops it.
	OnePass func(crds, objects []*unstructured.Unstructured) plan.Plan
	// Plans are the plans of a release that runs them across reconciles,
	// resumed from status.pending and status.plans; nil for a release
	// applied in one pass (see Resumable).
	Plans PlanSet
	// PlanNames are every plan the release offers, listed in status
	// (NEVER_RUN until they run); none for an engine that lists none.
	PlanNames []string
	// RunsOnRequest: spec.plans.run starts a plan of the release.
	RunsOnRequest bool
	// Params are the effective parameters, recorded with the revision;
	// Changed the ones that differ from the installed revision's.
	Params  map[string]any
	Changed []string
	// Warnings are what the engine warned of (the Warnings condition).
	Warnings []string
	// RollsBack: a failed or unhealthy attempt is retried, then
	// remediated (rolled back, uninstalled) as spec.upgrade and
	// spec.install say. Otherwise what is unhealthy after the plans
	// finished waits: rolling plans back is not Annex's to decide.
	RollsBack bool
	// Resources are spec.resources as the engine places them, applied by
	// the task named ResourcesTask; status.resources follows their
	// health. ResourcesTask is "" for an engine that takes none.
	Resources     []*unstructured.Unstructured
	ResourcesTask string
}

// Resumable reports whether the release runs plans across reconciles,
// each pass's step states written to status.plans so that a manager that
// stops anywhere resumes at the step it was in (a package's or a
// bundle's plans: Plans), rather than in one pass within one reconcile
// (OnePass: a chart). A chart runs in one pass because it is one Helm
// install or upgrade: its hooks and phases are not plans a person runs,
// abandons or resumes on their own, and applying it again from the start
// is what Helm does with an interrupted upgrade; the revision's record,
// written before the first object, keeps what a stopped pass applied
// owned. A package's plans are named, long-running and have effects that
// must not happen twice (Jobs, pipes), so each step is checkpointed. A
// nil release is not resumable.
func (r *Release) Resumable() bool { return r != nil && r.Plans != nil }

// PlanSet is a release's plans, rendered on demand: a change renders
// only the plans it runs.
type PlanSet interface {
	// Select names the plans a change runs, in order, and what
	// triggered them.
	Select(c PlanChange) (names []string, trigger string)
	// Render renders the named plans, in order, and what they warn of.
	// An error is an *EngineError naming the plan.
	Render(names []string) ([]plan.Plan, []string, error)
	// Cleanup renders the plan an uninstall runs; nil when there is
	// none. Its warnings say why it will not run.
	Cleanup() (*plan.Plan, []string)
}

// PlanChange is a change of the installed revision, for PlanSet.Select.
type PlanChange struct {
	// Install: nothing is installed. Upgrade: a new version, or new
	// content of the installed one.
	Install, Upgrade bool
	// Changed are the parameters whose effective value changed.
	Changed []string
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

// StorageMigration is what one Target.MigrateStoredVersions did.
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
