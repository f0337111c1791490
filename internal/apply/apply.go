// Package apply writes rendered objects into a cluster with server-side
// apply, in phases, and keeps track of what it wrote: the one applier behind
// every engine (Helm charts, Annex packages, operators).
//
// Every object it writes carries the labels of the installation that owns
// it; prune, delete and conflict detection trust those labels, and, for
// the objects an adoption took over without writing them (Owner.Adopted),
// their UIDs: so Annex never removes an object it did not create or
// adopt, and takes over an existing one only when it belongs to no
// installation.
package apply

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/kubeapis"
	"github.com/annex-platform/annex/internal/names"
	"github.com/annex-platform/annex/internal/plan"
)

// DefaultCRDEstablishTimeout bounds the wait for applied CRDs to become
// Established when Applier.CRDEstablishTimeout is zero.
const DefaultCRDEstablishTimeout = 30 * time.Second

// Applier applies, prunes, deletes and checks the health of sets of objects
// in one cluster.
type Applier struct {
	// Client reads and writes unstructured objects; it must use Mapper.
	Client client.Client
	// Mapper maps kinds to resources. It must reload on a miss, so that
	// kinds of CRDs applied in the same call become usable.
	Mapper meta.RESTMapper
	// CRDEstablishTimeout bounds the wait for applied CRDs to become
	// Established; zero means DefaultCRDEstablishTimeout.
	CRDEstablishTimeout time.Duration
	// Workers is how many objects of one phase are applied at once; zero
	// means DefaultWorkers.
	Workers int
	// REST sends the requests the typed client cannot express (a delete
	// whose answer tells whether the object is gone); it must use the same
	// cluster as Client.
	REST rest.Interface
	// Exec runs commands in Pods, for RunPipe; New sets it to use the
	// cluster's pods/exec subresource. Tests may substitute it where no
	// kubelet answers.
	Exec PodExec

	// noCollectionDelete holds the resources (schema.GroupResource) whose
	// collections this cluster refused to delete (deleteSelected).
	noCollectionDelete sync.Map
}

// New returns an Applier for the cluster cfg points at, with a RESTMapper
// that discovers new kinds when it meets them (LazyMapper).
func New(cfg *rest.Config) (*Applier, error) {
	return NewWithMapper(cfg, nil)
}

// NewWithMapper is New with the REST mapper of another Applier of the same
// cluster, or a new one when mapper is nil. What discovery says does not
// depend on who asks, so an Applier that impersonates someone (cfg's
// Impersonate) shares the mapper of the cluster's own.
func NewWithMapper(cfg *rest.Config, mapper meta.RESTMapper) (*Applier, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("build HTTP client: %w", err)
	}
	raw := rest.CopyConfig(cfg)
	raw.GroupVersion = &schema.GroupVersion{}
	raw.NegotiatedSerializer = serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
	raw.ContentType, raw.AcceptContentTypes = "application/json", "application/json"
	restClient, err := rest.RESTClientForConfigAndClient(raw, httpClient)
	if err != nil {
		return nil, fmt.Errorf("build REST client: %w", err)
	}
	if mapper == nil {
		mapper = NewLazyMapper(restClient)
	}
	c, err := client.New(cfg, client.Options{HTTPClient: httpClient, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("build client: %w", err)
	}
	return &Applier{Client: c, Mapper: mapper, REST: restClient, Exec: newPodExec(cfg, restClient)}, nil
}

// Owner identifies the installation that owns applied objects. It is
// written as labels on every object Apply writes.
type Owner struct {
	Name, Namespace string
	// Adopted are objects of the installation that an adoption took over
	// without writing them (ApplyOptions.DeferHandOver): they carry no
	// installation's labels, and the installation owns each by its UID
	// until it first writes it (see claimAdopted).
	Adopted []v1alpha1.AdoptedObject
	// AdoptedByOthers maps the UIDs of the objects other installations
	// adopted without writing them (their Adopted) to those installations
	// ("namespace/name"): such an object is refused as another
	// installation's, as one carrying its labels is.
	AdoptedByOthers map[types.UID]string
}

// String is "namespace/name" as the owner's labels carry it: the name
// shortened beyond 63 characters (names.LabelValue), so that it compares
// with installationOf.
func (o Owner) String() string { return o.Namespace + "/" + names.LabelValue(o.Name) }

func (o Owner) labels() map[string]string {
	return map[string]string{
		v1alpha1.LabelManagedBy:             v1alpha1.ManagedByValue,
		v1alpha1.LabelInstallationName:      names.LabelValue(o.Name),
		v1alpha1.LabelInstallationNamespace: o.Namespace,
	}
}

// owns reports whether obj carries all of o's labels, or is one of
// o.Adopted (see adoptedAs).
func (o Owner) owns(obj *unstructured.Unstructured) bool {
	return o.labelled(obj) || o.adoptedAs(obj) != nil
}

// labelled reports whether obj carries all of o's labels.
func (o Owner) labelled(obj *unstructured.Unstructured) bool {
	l := obj.GetLabels()
	for k, v := range o.labels() {
		if l[k] != v {
			return false
		}
	}
	return true
}

// adoptedAs returns the entry of o.Adopted that obj is: the same object
// (same UID) carrying no installation's labels yet. It returns nil for any
// other object, one of the same name recreated by someone else among them.
func (o Owner) adoptedAs(obj *unstructured.Unstructured) *v1alpha1.AdoptedObject {
	if installationOf(obj) != "" || obj.GetUID() == "" {
		return nil
	}
	for i := range o.Adopted {
		if o.Adopted[i].UID == obj.GetUID() {
			return &o.Adopted[i]
		}
	}
	return nil
}

// mayHaveAdopted reports whether ref names an object of o.Adopted: one
// Annex may not have written, which carries no labels to select it by.
func (o Owner) mayHaveAdopted(ref v1alpha1.ObjectReference) bool {
	for i := range o.Adopted {
		a := o.Adopted[i].ObjectReference
		if a.Group == ref.Group && a.Kind == ref.Kind && a.Namespace == ref.Namespace && a.Name == ref.Name {
			return true
		}
	}
	return false
}

// holder returns "namespace/name" of the installation obj belongs to: the
// one whose labels it carries or, when it carries none, the one that
// adopted it without writing it (o itself, or one of o.AdoptedByOthers);
// "" when none.
func (o Owner) holder(obj *unstructured.Unstructured) string {
	if other := installationOf(obj); other != "" {
		return other
	}
	if o.adoptedAs(obj) != nil {
		return o.String()
	}
	return o.AdoptedByOthers[obj.GetUID()]
}

// installationOf returns "namespace/name" of the installation whose labels
// obj carries (as Owner.String writes it), or "" when it carries none.
func installationOf(obj *unstructured.Unstructured) string {
	l := obj.GetLabels()
	if l[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue || l[v1alpha1.LabelInstallationName] == "" {
		return ""
	}
	return Owner{Name: l[v1alpha1.LabelInstallationName], Namespace: l[v1alpha1.LabelInstallationNamespace]}.String()
}

// Set is what one installation wants in a cluster.
type Set struct {
	// CRDs are CustomResourceDefinitions; a CRD in Objects is treated alike.
	CRDs []*unstructured.Unstructured
	// Objects are all other objects, custom resources and Helm hooks
	// included.
	Objects []*unstructured.Unstructured
}

// ApplyOptions change how an apply writes.
type ApplyOptions struct {
	// TakeOwnership forces server-side apply, so that fields another field
	// manager owns become Annex's, and adopts existing objects that carry
	// no installation's labels. An object labelled for another
	// installation is refused even then.
	TakeOwnership bool
	// HandOver names field managers (another tool's: helm,
	// helm-controller) whose objects an adoption takes over in place:
	// an existing object one of them manages is applied with force and
	// their managedFields entries are removed, so that Annex alone owns
	// what it applies (see handOverOne). An object that already matches
	// is not written with DeferHandOver; without, it gets Annex's labels
	// and the new managedFields in one write, which leaves its spec, and so
	// its generation, alone.
	HandOver []string
	// DeferHandOver, with HandOver, leaves unwritten an existing object
	// that already matches (the server's dry run of a forced apply
	// changes nothing but Annex's labels): it is listed in
	// Result.Adopted, the installation owns it by UID (Owner.Adopted),
	// and the first apply that changes it claims it (claimAdopted).
	DeferHandOver bool
	// Create expects the objects not to exist yet (an installation's first
	// apply): each is created, one request where reading and applying
	// take two, and one that exists after all (a retry after a crash, an
	// object to take over) is read and applied as without Create. A
	// created object's fields are owned by the create's managedFields
	// entry until Annex next applies it, which first turns that entry
	// into its apply entry (claimCreated), so that the apply removes what
	// a new revision no longer sets.
	Create bool
}

// Result is what an apply did.
type Result struct {
	// Inventory lists the regular objects applied, ordered by phase, group,
	// kind, namespace and name.
	Inventory []v1alpha1.ObjectReference
	// Health is the health of those objects as the apply left them: each
	// as the server answered its write, or as it was read when it needed
	// none (a CRD as it was once Established). It spares reading
	// everything again right after writing it; objects not ready yet are
	// read again with Health.
	Health Health
	// Adopted are the objects of Inventory left unwritten for their
	// adoption (ApplyOptions.DeferHandOver, or Owner.Adopted that this
	// apply did not change), in inventory order: the caller records them
	// and passes them as Owner.Adopted to every later call.
	Adopted []v1alpha1.AdoptedObject
}

// Apply is ApplyWithOptions with the zero ApplyOptions, returning the
// inventory alone.
func (a *Applier) Apply(ctx context.Context, owner Owner, defaultNamespace string, set Set) ([]v1alpha1.ObjectReference, error) {
	res, err := a.ApplyWithOptions(ctx, owner, defaultNamespace, set, ApplyOptions{})
	return res.Inventory, err
}

// ApplyWithOptions writes the regular objects of set into the cluster with
// server-side apply as field manager v1alpha1.FieldManager and returns the
// inventory of what it applied and its health (see Result). Helm hooks in
// set are neither applied nor listed: they run
// only on an install or upgrade, in a chart's plan (Start). The objects of
// set are not modified.
//
// Objects go in the phases of ChartSteps: the Namespace named defaultNamespace
// if set brings it, CRDs (then Apply waits until each is
// Established, at most CRDEstablishTimeout), Namespaces, ServiceAccounts
// and RBAC, everything else, and last the custom resources whose CRD is in
// set. The objects of one phase are applied concurrently by Workers
// workers; a phase starts only when the previous one is done. Each object
// is applied once. A namespaced object without a namespace is put in
// defaultNamespace; a cluster-scoped one loses its namespace.
//
// Each object is read first. One that already matches (see drifted) is not
// written, so that applying an unchanged set makes no writes. A write of
// an existing object carries the resourceVersion that was read as a
// precondition: if anyone changes the object in between, the write fails,
// and the object is read again and rechecked, so Apply never overwrites an
// object that became another installation's after it was read. (An object
// that did not exist when read is created without a precondition, which
// server-side apply cannot express; two installations that create the same
// object in the same instant can both succeed.)
//
// Before writing anything Apply checks that every kind not defined by set
// exists. Errors: *ConflictError when an object belongs to another
// installation or some of its fields to another field manager (unless
// opts.TakeOwnership); *ObjectError for any other failure of one object (a
// missing kind among them); the errors of one phase are joined. On an
// error Apply still returns the inventory of the objects it did apply, so
// that the caller can record them (and later prune or delete them).
func (a *Applier) ApplyWithOptions(ctx context.Context, owner Owner, defaultNamespace string, set Set, opts ApplyOptions) (Result, error) {
	set = copySet(set)
	var steps []Step
	for _, st := range ChartSteps(set, defaultNamespace, false) {
		if st.Hook == "" {
			steps = append(steps, st)
		}
	}
	return a.run(ctx, owner, defaultNamespace, steps, HookOptions{ApplyOptions: opts})
}

// copySet deep-copies the objects of set, so that placing and labelling
// them leaves the caller's objects alone.
func copySet(set Set) Set {
	cp := func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		out := make([]*unstructured.Unstructured, len(objs))
		for i, o := range objs {
			out[i] = o.DeepCopy()
		}
		return out
	}
	return Set{CRDs: cp(set.CRDs), Objects: cp(set.Objects)}
}

// run applies steps in order, each with Run.step, and stops at the first
// error. It returns the inventory of the regular objects applied and their
// health.
func (a *Applier) run(ctx context.Context, owner Owner, defaultNamespace string, steps []Step, opts HookOptions) (Result, error) {
	r, err := a.begin(owner, defaultNamespace, steps, opts)
	if err != nil {
		return Result{}, err
	}
	for i := range steps {
		if err := r.step(ctx, i); err != nil {
			return r.Result(), err
		}
	}
	res := r.Result()
	a.checkWebhooks(ctx, &res.Health, liveOf(r.inventory), false)
	return res, nil
}

// liveOf returns the live objects of entries.
func liveOf(entries []phasedRef) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(entries))
	for i, e := range entries {
		out[i] = e.live
	}
	return out
}

// Run is an apply of a chart's steps in progress: the steps of the plan
// ChartPlan made, run one at a time by the caller's plan driver (the
// installation controller's) with Step, in plan order. It keeps what the
// steps share: the objects already applied by a step of the same kind, the
// inventory so far, and the hooks to delete once every hook of their event
// succeeded. It decides nothing about the plan: the driver does.
type Run struct {
	a                *Applier
	owner            Owner
	defaultNamespace string
	opts             HookOptions
	steps            []Step
	// offsets[i] is the index in steps of phase i's first step.
	offsets   []int
	seen      map[stepKey]bool
	inventory []phasedRef
	succeeded []*unstructured.Unstructured // hooks of the current event to delete once all succeeded
}

// Start starts applying p, a chart's plan as ChartPlan makes it (its
// phases and hook weights as steps), with opts: it checks, before
// anything is written, that the owner is named and that every kind p does
// not define exists (the errors of Apply). The objects of p are copied
// first, so that placing and labelling them leaves p alone. The caller
// then runs each step with Step, in plan order, and reads the Result.
func (a *Applier) Start(owner Owner, defaultNamespace string, p plan.Plan, opts HookOptions) (*Run, error) {
	copies := map[*unstructured.Unstructured]*unstructured.Unstructured{}
	cp := func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		out := make([]*unstructured.Unstructured, len(objs))
		for i, o := range objs {
			if _, ok := copies[o]; !ok {
				copies[o] = o.DeepCopy()
			}
			out[i] = copies[o]
		}
		return out
	}
	var all []*unstructured.Unstructured
	for _, ph := range p.Phases {
		for _, st := range ph.Steps {
			for _, t := range st.Tasks {
				all = append(all, t.Objects...)
			}
		}
	}
	crds := definedKinds(regularObjects(all))
	var (
		steps   []Step
		offsets []int
	)
	for _, ph := range p.Phases {
		offsets = append(offsets, len(steps))
		for _, st := range ph.Steps {
			step := Step{Name: st.Name}
			for _, t := range st.Tasks {
				step.Objects = append(step.Objects, cp(t.Objects)...)
				if t.Kind == plan.TaskHook {
					step.Hook = HookEvent(t.Hook)
				}
			}
			if step.Hook == "" && len(step.Objects) > 0 {
				step.phase = phaseOf(step.Objects[0].GroupVersionKind().GroupKind(), crds)
			}
			steps = append(steps, step)
		}
	}
	r, err := a.begin(owner, defaultNamespace, steps, opts)
	if err != nil {
		return nil, err
	}
	r.offsets = offsets
	return r, nil
}

// begin checks steps before any write (see Start) and returns their Run.
func (a *Applier) begin(owner Owner, defaultNamespace string, steps []Step, opts HookOptions) (*Run, error) {
	if owner.Name == "" || owner.Namespace == "" {
		return nil, fmt.Errorf("apply: owner needs a name and a namespace (got %q)", owner.String())
	}
	var all []*unstructured.Unstructured
	for _, st := range steps {
		all = append(all, st.Objects...)
	}
	crds := definedKinds(regularObjects(all))

	// Fail before any write when a kind the set does not bring is missing.
	for _, o := range all {
		if phaseOf(o.GroupVersionKind().GroupKind(), crds) == phaseCustomResources {
			continue
		}
		if err := a.place(o, defaultNamespace); err != nil {
			return nil, err
		}
	}
	return &Run{a: a, owner: owner, defaultNamespace: defaultNamespace, opts: opts, steps: steps, offsets: []int{0}, seen: map[stepKey]bool{}}, nil
}

// Step runs the step ref of the plan Start was given: its regular objects
// as ApplyWithOptions applies them (concurrently, CRDs then awaited until
// Established), or its hooks.
//
// Hooks run one at a time. Each hook object is labelled for owner like any
// other object but is not part of the inventory (as in Helm, it is not a
// part of the release). Its helm.sh/hook-delete-policy is honoured:
// before-hook-creation (the default) deletes the previous object of the
// same name, if it belongs to owner, and waits until it is gone;
// hook-succeeded deletes the object once every hook of its event succeeded
// (once the last hook step of the event succeeded, as Helm does, so that a
// Job's ServiceAccount and RBAC hooks outlive it), hook-failed once it
// failed. A hook Job is awaited until its Complete or Failed condition, a
// hook Pod until it Succeeded or Failed, each at most opts.HookTimeout;
// other hook objects are not awaited.
//
// An error is the step's failure: a *HookError when a hook failed or
// timed out, and those of ApplyWithOptions. Result then holds the regular
// objects applied before it.
func (r *Run) Step(ctx context.Context, ref plan.StepRef) error {
	if ref.Phase < 0 || ref.Phase >= len(r.offsets) || r.offsets[ref.Phase]+ref.Step >= len(r.steps) {
		return fmt.Errorf("apply: the plan has no step %d of phase %d", ref.Step, ref.Phase)
	}
	return r.step(ctx, r.offsets[ref.Phase]+ref.Step)
}

// step runs steps[i] (see Step).
func (r *Run) step(ctx context.Context, i int) error {
	st := r.steps[i]
	err := r.a.runStep(ctx, r.owner, r.defaultNamespace, st, r.opts, r.seen, &r.inventory, &r.succeeded)
	if lastOfEvent := st.Hook != "" && (i == len(r.steps)-1 || r.steps[i+1].Hook != st.Hook); err == nil && lastOfEvent {
		err = r.a.deleteSucceeded(ctx, r.owner, r.succeeded, r.opts.timeout())
		r.succeeded = nil
	}
	return err
}

// Result is the inventory of the regular objects the steps run so far
// applied, and their health.
func (r *Run) Result() Result { return resultOf(r.inventory) }

// stepKey is an object of a chart's apply, once per hook event: a hook of
// several events runs at each, but no object is applied twice by one step
// kind.
type stepKey struct {
	hook   HookEvent // "" for regular objects
	object objKey
}

// runStep applies one step of a chart: regular objects concurrently (CRDs
// then awaited until Established), hooks one at a time, each awaited. The
// regular objects applied join inventory; the hooks to delete once their
// event succeeded join succeeded.
func (a *Applier) runStep(ctx context.Context, owner Owner, defaultNamespace string, st Step, opts HookOptions, seen map[stepKey]bool, inventory *[]phasedRef, succeeded *[]*unstructured.Unstructured) error {
	// Custom resources are placed once their CRDs are Established.
	for _, o := range st.Objects {
		if err := a.place(o, defaultNamespace); err != nil {
			return err
		}
		ref := refOf(o)
		key := stepKey{hook: st.Hook, object: keyOf(ref)}
		if seen[key] {
			return &ObjectError{Op: "apply", Object: ref,
				Err: errors.New("the object appears more than once in the set; remove the duplicate")}
		}
		seen[key] = true
	}
	if st.Hook != "" {
		return a.runHookStep(ctx, owner, st, opts, succeeded)
	}
	applied, err := a.applyConcurrently(ctx, owner, st.Objects, opts.ApplyOptions)
	if err == nil && st.phase == phaseCRDs {
		err = a.waitEstablished(ctx, applied)
	}
	for _, o := range applied {
		*inventory = append(*inventory, phasedRef{ref: refOf(o.desired), phase: st.phase, live: o.live, adopted: o.adopted})
	}
	return err
}

// ChartPlan is the plan of a chart's apply: one serial phase whose steps
// are steps (ChartSteps' phases and hook weights), each one task: TaskApply for
// regular objects, TaskHook for hooks (with their event). The Helm engine
// emits it in a chart's release; Start and Step run it.
func ChartPlan(steps []Step) plan.Plan {
	ph := plan.Phase{Name: "apply", Strategy: plan.Serial}
	for _, st := range steps {
		kind := plan.TaskApply
		if st.Hook != "" {
			kind = plan.TaskHook
		}
		ph.Steps = append(ph.Steps, plan.Step{Name: st.Name, Tasks: []plan.Task{{Name: st.Name, Kind: kind, Hook: string(st.Hook), Objects: st.Objects}}})
	}
	return plan.Plan{Name: "apply", Strategy: plan.Serial, Phases: []plan.Phase{ph}}
}

// resultOf orders the entries of an apply into its Result.
func resultOf(entries []phasedRef) Result {
	refs, live := sortInventory(entries)
	res := Result{Inventory: withResourceVersions(refs, live), Health: healthOf(refs, live)}
	for _, e := range entries {
		if e.adopted != nil {
			res.Adopted = append(res.Adopted, *e.adopted)
		}
	}
	return res
}

// appliedObject is an object of a set and its state in the cluster after
// the apply; adopted is set when the apply left it unwritten for its
// adoption (Result.Adopted).
type appliedObject struct {
	desired, live *unstructured.Unstructured
	adopted       *v1alpha1.AdoptedObject
}

// DefaultWorkers is how many objects of one phase Apply writes at once
// when Applier.Workers is zero.
const DefaultWorkers = 4

func (a *Applier) workers() int {
	if a.Workers > 0 {
		return a.Workers
	}
	return DefaultWorkers
}

// applyConcurrently applies objs with at most a.workers() at once and
// returns those applied, in the order of objs, and the joined errors of
// the others in the same order.
func (a *Applier) applyConcurrently(ctx context.Context, owner Owner, objs []*unstructured.Unstructured, opts ApplyOptions) ([]appliedObject, error) {
	errs := make([]error, len(objs))
	live := make([]*unstructured.Unstructured, len(objs))
	forEach(a.workers(), len(objs), func(i int) {
		if len(opts.HandOver) > 0 {
			live[i], errs[i] = a.handOverOne(ctx, owner, objs[i], opts.HandOver, opts.DeferHandOver)
			return
		}
		if opts.Create {
			live[i], errs[i] = a.createOne(ctx, owner, objs[i], opts.TakeOwnership)
			return
		}
		live[i], errs[i] = a.applyOne(ctx, owner, objs[i], opts.TakeOwnership)
	})
	var applied []appliedObject
	for i, o := range objs {
		if errs[i] == nil {
			applied = append(applied, appliedObject{desired: o, live: live[i], adopted: unwritten(owner, o, live[i], opts)})
		}
	}
	return applied, errors.Join(errs...)
}

// forEach calls fn(0) … fn(n-1) on at most workers goroutines and returns
// when all calls have returned.
func forEach(workers, n int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// maxApplyAttempts bounds how often applyOne reads and writes an object
// that keeps changing between its read and its write.
const maxApplyAttempts = 4

// applyOne labels obj for owner and applies it unless it already matches,
// refusing an object that belongs to another installation. The write of an
// existing object is conditional on the resourceVersion read. A Job of
// owner whose immutable fields obj changes is deleted and created anew
// (see mustReplaceJob), at most once per call. An object Annex created
// (ApplyOptions.Create) and has not applied since is claimed first (see
// claimCreated): a write the first time it is applied again, even when
// nothing else changes. It returns the object as
// the server answered the write, or as read when it needed none; obj
// itself is not changed beyond its labels.
func (a *Applier) applyOne(ctx context.Context, owner Owner, obj *unstructured.Unstructured, force bool) (*unstructured.Unstructured, error) {
	ref := refOf(obj)
	labelFor(obj, owner)
	// Fields the server owns must not be sent back.
	obj.SetResourceVersion("")
	obj.SetManagedFields(nil)

	replaced := false
	for attempt := 1; ; attempt++ {
		live, err := a.get(ctx, ref)
		if err != nil {
			return nil, &ObjectError{Op: "apply", Object: ref, Err: err}
		}
		body := obj.DeepCopy() // the server's answer is decoded into it
		if live != nil {
			if other := owner.holder(live); other != "" && other != owner.String() {
				return nil, &ConflictError{Object: ref, Installation: other}
			}
			if adopted := owner.adoptedAs(live); adopted != nil {
				same, err := a.unchangedAdopted(ctx, obj, live, adopted)
				if err != nil {
					return nil, &ObjectError{Op: "apply", Object: ref, Err: err}
				}
				if same {
					// Adopted from this very rendering, and not changed
					// since: nothing to write, nothing to claim.
					return live, nil
				}
				claimed, err := a.claimAdopted(ctx, owner, live, adopted.FieldManagers)
				if apierrors.IsConflict(err) && attempt < maxApplyAttempts {
					continue // changed since it was read
				}
				if err != nil {
					return nil, &ObjectError{Op: "claim", Object: ref, Err: err}
				}
				live = claimed
			}
			if createdFromSame(obj, live) && len(drifted(obj, live)) == 0 {
				// Created from this very object and not changed since:
				// nothing to write, nothing to claim.
				return live, nil
			}
			claimed, err := a.claimCreated(ctx, live)
			if apierrors.IsConflict(err) && attempt < maxApplyAttempts {
				continue // changed since it was read
			}
			if err != nil {
				return nil, &ObjectError{Op: "apply", Object: ref, Err: err}
			}
			live = claimed
			drift := drifted(obj, live)
			if len(drift) == 0 {
				return live, nil
			}
			if !replaced && a.mustReplaceJob(ctx, owner, obj, live, drift) {
				if err := a.replaceJob(ctx, live); err != nil {
					return nil, &ObjectError{Op: "replace", Object: ref, Err: err}
				}
				replaced = true
				continue
			}
			body.SetResourceVersion(live.GetResourceVersion())
		}
		err = a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(body),
			client.FieldOwner(v1alpha1.FieldManager), &client.ApplyOptions{Force: ptr.To(force)})
		if err == nil {
			failpoint.Hit(failpoint.AfterFirstObject, owner.String())
			return body, nil
		}
		if c := fieldConflict(ref, err); c != nil {
			return nil, c
		}
		if live != nil && !replaced && isJobOf(owner, live) && isTemplateImmutableError(err) {
			// The comparison missed what the server refuses: replace anyway.
			if err := a.replaceJob(ctx, live); err != nil {
				return nil, &ObjectError{Op: "replace", Object: ref, Err: err}
			}
			replaced = true
			continue
		}
		if live != nil && apierrors.IsConflict(err) && attempt < maxApplyAttempts {
			// Changed since it was read: read it again.
			continue
		}
		return nil, &ObjectError{Op: "apply", Object: ref, Err: a.explainApplyError(ctx, err)}
	}
}

// createOne labels obj for owner and creates it, with the field
// validation an apply has (unknown fields are refused, not dropped). An
// object that exists already is left to applyOne, which refuses it when
// it belongs to another installation. It returns the object as the
// server answered; obj itself is not changed beyond its labels.
func (a *Applier) createOne(ctx context.Context, owner Owner, obj *unstructured.Unstructured, force bool) (*unstructured.Unstructured, error) {
	labelFor(obj, owner)
	body := obj.DeepCopy() // the server's answer is decoded into it
	body.SetResourceVersion("")
	body.SetManagedFields(nil)
	annotations := body.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[annotationCreatedFrom] = desiredDigest(obj)
	body.SetAnnotations(annotations)
	err := a.Client.Create(ctx, body, client.FieldOwner(v1alpha1.FieldManager), client.FieldValidation("Strict"))
	switch {
	case err == nil:
		failpoint.Hit(failpoint.AfterFirstObject, owner.String())
		return body, nil
	case apierrors.IsAlreadyExists(err):
		return a.applyOne(ctx, owner, obj, force)
	default:
		return nil, &ObjectError{Op: "apply", Object: refOf(obj), Err: a.explainApplyError(ctx, err)}
	}
}

// claimCreated turns the managedFields entry of Annex's create of live
// (ApplyOptions.Create) into the entry of its applies, in one merge patch
// conditional on live's resourceVersion, and returns the object as the
// server answered; live without such an entry is returned as it is. The
// fields stay Annex's, now as applied: the apply that follows removes
// those the new revision no longer sets (fields the server defaulted at
// the create among them, which it defaults again).
func (a *Applier) claimCreated(ctx context.Context, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	i := createdEntry(live)
	if i < 0 {
		return live, nil
	}
	entries := slices.Clone(live.GetManagedFields())
	entries[i].Operation = metav1.ManagedFieldsOperationApply
	return a.patchOwnership(ctx, live, nil, entries)
}

// annotationCreatedFrom marks an object Annex created (ApplyOptions.Create)
// with the digest of the desired object it created it from, so that an
// apply of the same desired object knows it drops nothing and need not
// claim it. The claim's apply removes it, as it does every field the
// desired object does not set.
const annotationCreatedFrom = "annex.dev/created-from"

// desiredDigest is the SHA-256 of obj's JSON (keys sorted), without the
// fields the server sets and without annotationCreatedFrom.
func desiredDigest(obj *unstructured.Unstructured) string {
	c := obj.DeepCopy()
	c.SetResourceVersion("")
	c.SetManagedFields(nil)
	if annotations := c.GetAnnotations(); annotations[annotationCreatedFrom] != "" {
		delete(annotations, annotationCreatedFrom)
		c.SetAnnotations(annotations)
	}
	data, err := json.Marshal(c.Object)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256(data))
}

// createdFromSame reports whether live is an object Annex created and has
// not applied since, created from desired itself: an apply of desired
// would then remove nothing the create set.
func createdFromSame(desired, live *unstructured.Unstructured) bool {
	from := live.GetAnnotations()[annotationCreatedFrom]
	return from != "" && createdEntry(live) >= 0 && from == desiredDigest(desired)
}

// createdEntry returns the index in obj's managedFields of the entry
// Annex's create made (field manager "annex", operation Update, no
// subresource) when obj has no entry of Annex's applies, else -1.
func createdEntry(obj *unstructured.Unstructured) int {
	created := -1
	for i, e := range obj.GetManagedFields() {
		if e.Manager != v1alpha1.FieldManager || e.Subresource != "" {
			continue
		}
		switch e.Operation {
		case metav1.ManagedFieldsOperationApply:
			return -1
		case metav1.ManagedFieldsOperationUpdate:
			created = i
		}
	}
	return created
}

// labelFor adds owner's labels to obj.
func labelFor(obj *unstructured.Unstructured, owner Owner) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, owner.labels())
	obj.SetLabels(labels)
}

// place sets obj's namespace from the scope of its kind: defaultNamespace
// for a namespaced object without one, none for a cluster-scoped object.
func (a *Applier) place(obj *unstructured.Unstructured, defaultNamespace string) error {
	gvk := obj.GroupVersionKind()
	mapping, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return &ObjectError{Op: "apply", Object: refOf(obj), Err: a.mappingError(refOf(obj), err)}
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		obj.SetNamespace("")
		return nil
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(defaultNamespace)
	}
	if obj.GetNamespace() == "" {
		return &ObjectError{Op: "apply", Object: refOf(obj),
			Err: fmt.Errorf("metadata.namespace: required for namespaced kind %q; set it in the object or give the installation a target namespace", gvk.Kind)}
	}
	return nil
}

// mappingError explains a failed kind lookup in words a person can act on.
func (a *Applier) mappingError(ref v1alpha1.ObjectReference, err error) error {
	if !meta.IsNoMatchError(err) {
		return fmt.Errorf("look up API kind %q in group %q: %w", ref.Kind, ref.Group, err)
	}
	if served, _, err := a.servedVersions(gvkOf(ref).GroupKind()); err == nil && len(served) > 0 {
		return fmt.Errorf("API kind %q in group %q has no version %q (served: %s): change apiVersion",
			ref.Kind, ref.Group, ref.Version, strings.Join(served, ", "))
	}
	return fmt.Errorf("no API kind %q in group %q: install the extension that provides it first", ref.Kind, ref.Group)
}

// Serves says whether the cluster serves gvk, asking discovery again when
// the Mapper does not know it yet (a CRD applied since, an API server
// upgraded), and, when it does not, which versions of the kind it serves
// instead. Errors are discovery failing, never a kind not served.
func (a *Applier) Serves(gvk schema.GroupVersionKind) (kubeapis.Answer, error) {
	mapping, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil {
		return kubeapis.Answer{Served: true, Namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}, nil
	}
	if !meta.IsNoMatchError(err) {
		return kubeapis.Answer{}, fmt.Errorf("look up API kind %q in group %q: %w", gvk.Kind, gvk.Group, err)
	}
	versions, namespaced, err := a.servedVersions(gvk.GroupKind())
	return kubeapis.Answer{Versions: versions, Namespaced: namespaced}, err
}

// servedVersions lists the versions of gk the cluster serves, sorted, and
// whether gk is namespaced in them; none when it serves gk in none.
func (a *Applier) servedVersions(gk schema.GroupKind) (versions []string, namespaced bool, err error) {
	mappings, err := a.Mapper.RESTMappings(gk)
	if err != nil && !meta.IsNoMatchError(err) {
		return nil, false, fmt.Errorf("look up API kind %q in group %q: %w", gk.Kind, gk.Group, err)
	}
	for _, m := range mappings {
		versions = append(versions, m.GroupVersionKind.Version)
		namespaced = namespaced || m.Scope.Name() == meta.RESTScopeNameNamespace
	}
	slices.Sort(versions)
	return slices.Compact(versions), namespaced, nil
}

// waitEstablished waits until every applied CRD is Established, so that
// its kind can be applied, or fails with the CRD's own explanation. Each
// one's live state becomes the Established CRD it read.
func (a *Applier) waitEstablished(ctx context.Context, applied []appliedObject) error {
	timeout := a.CRDEstablishTimeout
	if timeout == 0 {
		timeout = DefaultCRDEstablishTimeout
	}
	for i := range applied {
		crd := applied[i].desired
		ref := refOf(crd)
		var why string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(crd.GroupVersionKind())
			if err := a.Client.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
				return false, err
			}
			established, reason := crdEstablished(got)
			why = reason
			if established {
				applied[i].live = got
			}
			return established, nil
		})
		if err != nil {
			if why == "" {
				why = err.Error()
			}
			return &ObjectError{Op: "apply", Object: ref,
				Err: fmt.Errorf("not Established within %s: %s", timeout, why)}
		}
	}
	return nil
}

// crdEstablished reports whether crd's Established condition is True and,
// when it is not, what its conditions say.
func crdEstablished(crd *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	var why []string
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		typ, status, msg := m["type"], m["status"], m["message"]
		if typ == "Established" && status == "True" {
			return true, ""
		}
		if status != "True" && msg != nil && msg != "" {
			why = append(why, fmt.Sprintf("%v: %v", typ, msg))
		}
	}
	if len(why) == 0 {
		return false, "condition Established is not True yet"
	}
	return false, strings.Join(why, "; ")
}
