// Package profile reconciles ExtensionProfiles: for every cluster a
// profile selects it creates and holds one ExtensionInstallation per
// extension — once (Default) or kept as the profile says (Enforced) — and
// removes them, as spec.removalPolicy says, when a cluster stops matching,
// an extension leaves the profile, or the profile is deleted.
package profile

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1 "k8s.io/api/core/v1"

	"golang.org/x/sync/errgroup"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/controller/batch"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/names"
	"github.com/annex-platform/annex/internal/rollout"
)

// Reconciler reconciles ExtensionProfiles.
type Reconciler struct {
	Client client.Client
	// Events records the installations a profile creates, updates and
	// removes; nil records none.
	Events events.EventRecorder

	// written are the cluster records this manager wrote that its cache
	// may not show yet (recordsWritten), and wrote the installations
	// (installationsWritten).
	written recordsWritten
	wrote   installationsWritten
}

// +kubebuilder:rbac:groups=annex.dev,resources=extensionprofiles,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=annex.dev,resources=extensionprofiles/status;extensionprofiles/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=annex.dev,resources=extensioninstallations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=annex.dev,resources=managedclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;create
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=annex.dev,resources=approvals,verbs=get;list;watch
// +kubebuilder:rbac:groups=annex.dev,resources=extensions,verbs=get;list;watch

// Reconcile brings a profile's installations to what it says, a revision
// at a time and in the steps of its rollout, then reports them.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &v1alpha1.ExtensionProfile{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ns := namespaceOf(p)
	// The lists below are the cache's own objects, not copies (at 1,000
	// clusters a copy of each per reconcile is most of its cost): what
	// changes one copies it first (act, removeOne, recordDefault).
	var installations v1alpha1.ExtensionInstallationList
	if err := r.Client.List(ctx, &installations, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	if !p.DeletionTimestamp.IsZero() {
		return r.remove(ctx, p, owned(p, installations.Items))
	}
	if !controllerutil.ContainsFinalizer(p, v1alpha1.FinalizerProfile) {
		patch := client.MergeFrom(p.DeepCopy())
		controllerutil.AddFinalizer(p, v1alpha1.FinalizerProfile)
		if err := r.Client.Patch(ctx, p, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	var profiles v1alpha1.ExtensionProfileList
	if err := r.Client.List(ctx, &profiles, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	clusters, mcs, err := r.clusters(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensureNamespace(ctx, ns); err != nil {
		return ctrl.Result{}, err
	}
	catalog, err := r.catalog(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	revs, err := r.revisions(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	revs, newest, made, err := r.ensureRevision(ctx, p, revs, wantedRevision(p, catalog))
	if err != nil {
		return ctrl.Result{}, err
	}
	if made {
		r.revisionMade(ctx, p, newest, revs[len(revs)-1].data)
	}
	data := map[int64]*v1alpha1.ProfileRevisionData{}
	for _, rev := range revs {
		data[rev.number] = rev.data
	}
	now := time.Now()
	unseenClusters, unseen := map[string]bool{}, map[string]bool{}
	for key, c := range r.wrote.unseen(p.Name, installations.Items, now) {
		unseenClusters[c] = true
		if key.Namespace == ns {
			unseen[key.Name] = true
		}
	}
	for i := range clusters {
		clusters[i].unseen = unseenClusters[clusters[i].name]
	}
	view := revisionView{data: data, catalog: catalog, now: now, adopt: revs[0].number, newest: newest, memo: versionMemo{}, unseen: unseen}
	views := observe(p, profiles.Items, clusters, installations.Items, view, newest,
		func(c cluster) (rollout.WindowState, error) { return rollout.Window(c.windows, now) })
	approvals, err := r.stepApprovals(ctx, p, revs[len(revs)-1])
	if err != nil {
		return ctrl.Result{}, err
	}
	ro := rollout.Decide(rollout.Input{
		Profile: p.Name, Now: now, Strategy: p.Spec.Rollout, Revision: newest,
		IgnoreWindows: data[newest].IgnoreMaintenanceWindows,
		State:         p.Status.Rollout, Clusters: views,
		Approved: approvals.approved, Denied: approvals.denied,
		Abort: p.Annotations[v1alpha1.AnnotationRolloutAbort] == strconv.FormatInt(newest, 10),
	})
	if why := approvals.refused(ro.State.StepName); why != "" && ro.State.Phase == v1alpha1.RolloutWaitingForApproval {
		ro.State.Message += "; " + why
	}
	moves := map[string]int64{}
	for _, m := range ro.Moves {
		moves[m.Cluster] = m.To
	}
	view.moves = moves
	decided := decide(p, profiles.Items, clusters, installations.Items, view)
	// The rollout's place is written before any cluster is changed: a
	// manager killed in between resumes at the same step.
	if err := r.writeStatus(ctx, p, decided, owned(p, installations.Items), ro, len(decided.actions) > 0); err != nil {
		return ctrl.Result{}, err
	}
	for _, e := range ro.Events {
		r.record(ctx, p, e)
		if e.Reason == "RolloutHalted" {
			reason, _, _ := strings.Cut(ro.State.HaltReason, ":")
			metrics.RolloutHalted(p.Name, reason)
		}
	}
	forward := 0
	for _, m := range ro.Moves {
		if m.To == newest {
			forward++
		}
	}
	metrics.RolloutMoved(p.Name, forward, len(ro.Moves)-forward)
	if err := r.carryOut(ctx, p, mcs, decided.actions, ro, moves); err != nil {
		return ctrl.Result{}, err
	}
	inUse := map[int64]bool{newest: true, ro.State.StableRevision: true}
	for _, v := range views {
		inUse[v.Revision], inUse[v.Previous] = true, true
	}
	if err := r.prune(ctx, p, revs, inUse); err != nil {
		return ctrl.Result{}, err
	}
	// Enforced installations being deleted are created again once gone;
	// their deletion wakes the profile.
	return ctrl.Result{RequeueAfter: ro.RequeueAfter}, nil
}

// catalog reads the Extensions p names, by name; one the catalogs do not
// offer (yet) is absent.
func (r *Reconciler) catalog(ctx context.Context, p *v1alpha1.ExtensionProfile) (map[string]*v1alpha1.Extension, error) {
	out := map[string]*v1alpha1.Extension{}
	for _, ext := range p.Spec.Extensions {
		e := &v1alpha1.Extension{}
		err := r.Client.Get(ctx, types.NamespacedName{Name: ext.Name}, e)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[ext.Name] = e
	}
	return out, nil
}

func namespaceOf(p *v1alpha1.ExtensionProfile) string {
	if p.Spec.Namespace == "" {
		return "annex-system"
	}
	return p.Spec.Namespace
}

// owned returns the installations labelled for p (pointers into all).
func owned(p *v1alpha1.ExtensionProfile, all []v1alpha1.ExtensionInstallation) []*v1alpha1.ExtensionInstallation {
	var out []*v1alpha1.ExtensionInstallation
	for i := range all {
		if all[i].Labels[v1alpha1.LabelProfile] == p.Name {
			out = append(out, &all[i])
		}
	}
	return out
}

// clusters returns the hub and every ManagedCluster not being deleted,
// with the Default extensions each has received.
func (r *Reconciler) clusters(ctx context.Context, p *v1alpha1.ExtensionProfile) ([]cluster, map[string]*v1alpha1.ManagedCluster, error) {
	var list v1alpha1.ManagedClusterList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	hub := cluster{name: "", defaults: map[string][]string{p.Name: r.written.defaults(p.Name, "", p.Annotations)}, reachable: true}
	hub.record, hub.hasRecord = r.written.newest(p.Name, "", p.Annotations)
	out := []cluster{hub}
	byName := map[string]*v1alpha1.ManagedCluster{}
	for i := range list.Items {
		mc := &list.Items[i]
		if !mc.DeletionTimestamp.IsZero() {
			continue
		}
		byName[mc.Name] = mc
		reachable := !meta.IsStatusConditionFalse(mc.Status.Conditions, v1alpha1.ConditionReachable)
		c := cluster{name: mc.Name, labels: mc.Labels, annotations: mc.Annotations, version: mc.Status.KubernetesVersion,
			defaults: map[string][]string{p.Name: r.written.defaults(p.Name, mc.Name, mc.Annotations)}, reachable: reachable, windows: mc.Spec.MaintenanceWindows}
		c.record, c.hasRecord = r.written.newest(p.Name, mc.Name, mc.Annotations)
		out = append(out, c)
	}
	return out, byName, nil
}

// defaultsIn reads the record of the Default extensions profile has
// created, kept in the annotation profiles.annex.dev/<profile>.
func defaultsIn(annotations map[string]string, profile string) []string {
	v := annotations[v1alpha1.AnnotationProfileDefaultsPrefix+profile]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// writers bounds how many clusters' installations one reconcile writes at
// once: a step of hundreds of clusters written one after another waits on
// the hub's API server round trip each time.
const writers = 16

// carryOut carries out the decision's actions once the rollout's state ro is
// written: each cluster's in order (its record of Default extensions
// after the installation), up to writers clusters at once. The
// failpoints mark where a crash is hardest to survive: the state written
// and no cluster changed; one installation of a cluster the rollout
// moves (forward, or back in a rollback) written and the others not.
func (r *Reconciler) carryOut(ctx context.Context, p *v1alpha1.ExtensionProfile, mcs map[string]*v1alpha1.ManagedCluster,
	actions []action, ro rollout.Decision, moves map[string]int64) error {
	if len(ro.Moves) > 0 {
		failpoint.Hit(failpoint.RolloutAfterState, p.Name)
	}
	byCluster := map[string][]action{}
	var order []string
	for _, a := range actions {
		c := a.want.cluster
		if a.kind == actRemove {
			c = a.existing.Spec.Cluster
		}
		if _, ok := byCluster[c]; !ok {
			order = append(order, c)
		}
		byCluster[c] = append(byCluster[c], a)
	}
	// The hub's record of Default extensions is an annotation of the
	// profile: only the hub's actions write it, to a copy of their own.
	hub := p.DeepCopy()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(writers)
	for _, c := range order {
		g.Go(func() error {
			// The cluster's record object: the hub's copy of the profile,
			// or a copy of the ManagedCluster (whose listed object is the
			// cache's). Its record actions change it in memory; it is
			// written once, after the cluster's installations.
			var record client.Object = hub
			if mc := mcs[c]; mc != nil {
				record = mc.DeepCopy()
			}
			notes := notesOf(p.Name, record, r.written.defaults(p.Name, c, record.GetAnnotations()))
			var done []action
			defer func() { r.tell(gctx, p, c, done) }()
			for _, a := range byCluster[c] {
				if notes.take(a) {
					continue
				}
				if err := r.act(gctx, p, a); err != nil {
					return fmt.Errorf("%s: %w", a.name, err)
				}
				done = append(done, a)
				if movesCluster(a, moves) {
					failpoint.Hit(movePoint(ro.State.Phase), p.Name)
				}
			}
			return r.writeNotes(gctx, p.Name, c, record, notes)
		})
	}
	return g.Wait()
}

// movesCluster reports whether a writes an installation of a cluster the
// rollout moves (moves are by cluster name).
func movesCluster(a action, moves map[string]int64) bool {
	cluster := a.want.cluster
	switch a.kind {
	case actRecordDefault, actRecordRevision, actDropRecord:
		return false
	case actRemove:
		cluster = a.existing.Spec.Cluster
	}
	_, ok := moves[cluster]
	return ok
}

// movePoint is the failpoint passed after each installation a rollout in
// phase writes.
func movePoint(phase v1alpha1.RolloutPhase) string {
	if phase == v1alpha1.RolloutRollingBack {
		return failpoint.RolloutDuringRollback
	}
	return failpoint.RolloutAfterFirstMove
}

// act carries out one action of the decision on an installation (the
// record actions are notes, written by writeNotes). It does not change p:
// actions of several clusters run at once.
func (r *Reconciler) act(ctx context.Context, p *v1alpha1.ExtensionProfile, a action) error {
	switch a.kind {
	case actCreate:
		spec, err := desiredSpec(p, a.want)
		if err != nil {
			return err
		}
		inst := &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespaceOf(p), Name: a.name},
			Spec:       spec,
		}
		stamp(inst, p, a.want)
		if err := r.Client.Create(ctx, inst); client.IgnoreAlreadyExists(err) != nil {
			return err
		}
		r.wrote.wrote(p.Name, inst, time.Now())
		return nil
	case actUpdate:
		spec, err := desiredSpec(p, a.want)
		if err != nil {
			return err
		}
		// A whole-object update (a merge patch would turn a null in the
		// values into a deletion); the installation controller writes
		// status all the while, so a conflict is retried on the newer
		// object at once rather than failing the reconcile.
		inst := a.existing.DeepCopy()
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			stamp(inst, p, a.want)
			inst.Spec.Extension, inst.Spec.Version, inst.Spec.Cluster = spec.Extension, spec.Version, spec.Cluster
			inst.Spec.TargetNamespace, inst.Spec.Values, inst.Spec.ValuesFrom = spec.TargetNamespace, spec.Values, spec.ValuesFrom
			inst.Spec.Upgrade.AllowDowngrade = spec.Upgrade.AllowDowngrade
			err := r.Client.Update(ctx, inst)
			if apierrors.IsConflict(err) {
				if getErr := r.Client.Get(ctx, client.ObjectKeyFromObject(inst), inst); getErr != nil {
					return getErr
				}
			}
			return err
		})
		if err == nil {
			r.wrote.wrote(p.Name, inst, time.Now())
		}
		return err
	case actRemove:
		return r.removeOne(ctx, p, a.existing)
	}
	return nil
}

// writeNotes writes what notes changed of a cluster's record object obj
// (its ManagedCluster, or the profile itself for the hub): the Default
// extensions recorded and the record of the revision it runs, in one
// merge patch of those annotations, written after the cluster's
// installations. Unconditional: only this profile's reconcile writes
// them, and the ManagedCluster's status changes all the while; what the
// cache does not show yet of an earlier write is remembered
// (recordsWritten), so that a later reconcile does not write it again.
// Nothing changed, nothing written; an object gone is not written.
func (r *Reconciler) writeNotes(ctx context.Context, profile, cluster string, obj client.Object, n *notes) error {
	if !n.changed() {
		return nil
	}
	base := obj.DeepCopyObject().(client.Object)
	obj.SetAnnotations(n.annotations)
	if err := r.Client.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return client.IgnoreNotFound(err)
	}
	switch {
	case n.dropped:
		r.written.forget(profile, cluster)
	case n.recorded != nil:
		r.written.add(profile, cluster, *n.recorded)
	}
	if n.defaultsAdded {
		r.written.addDefaults(profile, cluster, defaultsIn(n.annotations, profile))
	}
	return nil
}

// profileLabels are the labels of p's installation on cluster; a cluster
// name longer than a label value is shortened (names.LabelValue).
func profileLabels(p *v1alpha1.ExtensionProfile, cluster string) map[string]string {
	return map[string]string{v1alpha1.LabelProfile: p.Name, v1alpha1.LabelProfileCluster: names.LabelValue(clusterLabel(cluster))}
}

// stamp writes into inst's labels the profile, the cluster and the
// revision it is written from; a rollout's move also records its number,
// when, and the revision the cluster ran before.
func stamp(inst *v1alpha1.ExtensionInstallation, p *v1alpha1.ExtensionProfile, w want) {
	if inst.Labels == nil {
		inst.Labels = map[string]string{}
	}
	for k, v := range profileLabels(p, w.cluster) {
		inst.Labels[k] = v
	}
	inst.Labels[v1alpha1.LabelProfileRevision] = revisionLabel(w.revision)
	if !w.moved {
		return
	}
	if inst.Annotations == nil {
		inst.Annotations = map[string]string{}
	}
	inst.Annotations[v1alpha1.AnnotationProfileMove] = strconv.FormatInt(w.move, 10)
	inst.Annotations[v1alpha1.AnnotationProfileRevisionAt] = w.now.UTC().Format(time.RFC3339)
	if w.previous != w.revision {
		inst.Annotations[v1alpha1.AnnotationProfilePreviousRevision] = revisionLabel(w.previous)
	}
}

// removeOne deletes an installation that left the profile: with
// removalPolicy Orphan it first loses its uninstall finalizer, so that
// what it installed stays on the cluster.
func (r *Reconciler) removeOne(ctx context.Context, p *v1alpha1.ExtensionProfile, inst *v1alpha1.ExtensionInstallation) error {
	inst = inst.DeepCopy() // may be the cache's
	if p.Spec.RemovalPolicy == v1alpha1.DeletionPolicyOrphan && controllerutil.ContainsFinalizer(inst, v1alpha1.FinalizerUninstall) {
		patch := client.MergeFrom(inst.DeepCopy())
		controllerutil.RemoveFinalizer(inst, v1alpha1.FinalizerUninstall)
		if err := r.Client.Patch(ctx, inst, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if !inst.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := r.Client.Delete(ctx, inst); client.IgnoreNotFound(err) != nil {
		return err
	}
	r.wrote.deleted(p.Name, inst, time.Now())
	return nil
}

// remove takes a deleted profile's installations away, then releases it.
func (r *Reconciler) remove(ctx context.Context, p *v1alpha1.ExtensionProfile, installations []*v1alpha1.ExtensionInstallation) (ctrl.Result, error) {
	for _, inst := range installations {
		if err := r.removeOne(ctx, p, inst); err != nil {
			return ctrl.Result{}, err
		}
	}
	if len(installations) > 0 {
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	if err := r.dropRecords(ctx, p); err != nil {
		return ctrl.Result{}, err
	}
	if controllerutil.ContainsFinalizer(p, v1alpha1.FinalizerProfile) {
		patch := client.MergeFrom(p.DeepCopy())
		controllerutil.RemoveFinalizer(p, v1alpha1.FinalizerProfile)
		return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, p, patch))
	}
	return ctrl.Result{}, nil
}

// dropRecords removes a deleted profile's records of the revision each
// cluster runs, once its installations are gone: a profile made again
// under its name starts afresh.
func (r *Reconciler) dropRecords(ctx context.Context, p *v1alpha1.ExtensionProfile) error {
	var list v1alpha1.ManagedClusterList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range list.Items {
		if _, ok := list.Items[i].Annotations[v1alpha1.AnnotationProfileRevisionsPrefix+p.Name]; !ok {
			continue
		}
		mc := list.Items[i].DeepCopy()
		n := notesOf(p.Name, mc, nil)
		n.take(action{kind: actDropRecord})
		if err := r.writeNotes(ctx, p.Name, mc.Name, mc, n); err != nil {
			return fmt.Errorf("ManagedCluster %s: %w", list.Items[i].Name, err)
		}
	}
	return nil
}

// ensureNamespace creates the namespace the profile's installations live
// in when the cache (its metadata) does not hold it: a reconcile of a
// profile whose namespace exists writes nothing.
func (r *Reconciler) ensureNamespace(ctx context.Context, name string) error {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	err := r.Client.Get(ctx, types.NamespacedName{Name: name}, ns)
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	err = r.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return client.IgnoreAlreadyExists(err)
}

// maxNotReady bounds the installations the status names.
const maxNotReady = 10

// writeStatus aggregates the profile's installations.
// The write is conditional on the profile's resourceVersion whenever
// clusters are about to be changed (fenced): a manager that read an old
// rollout state changes nothing.
func (r *Reconciler) writeStatus(ctx context.Context, p *v1alpha1.ExtensionProfile, decided decision, installations []*v1alpha1.ExtensionInstallation,
	ro rollout.Decision, fenced bool) error {
	before := p.DeepCopy()
	st := &p.Status
	st.Rollout = ro.State.DeepCopy()
	st.Rollout.HeldBack, st.Rollout.HeldBackClusters = heldBack(decided.heldBack)
	rolloutConditions(p, ro.State)
	st.ObservedGeneration = p.Generation
	st.MatchingClusters = int32(decided.matching)
	st.Installations = int32(len(installations))
	st.ReadyInstallations = 0
	st.NotReady = nil
	var notReady []*v1alpha1.ExtensionInstallation
	for _, inst := range installations {
		if meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionReady) {
			st.ReadyInstallations++
			continue
		}
		notReady = append(notReady, inst)
	}
	// The first maxNotReady by name: sorting those not Ready is enough.
	slices.SortFunc(notReady, func(a, b *v1alpha1.ExtensionInstallation) int { return strings.Compare(a.Name, b.Name) })
	for _, inst := range notReady[:min(len(notReady), maxNotReady)] {
		s := v1alpha1.ProfileInstallationState{Cluster: clusterLabel(inst.Spec.Cluster), Extension: inst.Spec.Extension}
		if ready := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady); ready != nil {
			s.Reason, s.Message = ready.Reason, ready.Message
		}
		st.NotReady = append(st.NotReady, s)
	}
	cond := func(t string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: p.Generation})
	}
	if len(decided.invalid) > 0 {
		var msgs []string
		for _, m := range decided.invalid {
			msgs = append(msgs, m)
		}
		sort.Strings(msgs)
		cond(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonValuesInvalid,
			strings.Join(msgs, "; ")+"; the variables are .cluster.name, .cluster.labels, .cluster.annotations and .cluster.kubernetesVersion")
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
	}
	if len(decided.conflicts) > 0 {
		shown := decided.conflicts
		if len(shown) > 5 {
			shown = append(slices.Clone(shown[:5]), fmt.Sprintf("and %d more", len(decided.conflicts)-5))
		}
		cond(v1alpha1.ConditionConflict, metav1.ConditionTrue, v1alpha1.ReasonConflict, fmt.Sprintf(
			"%d extensions on selected clusters are given by another profile (higher spec.priority, or the same priority and an earlier name): %s; "+
				"raise spec.priority of the profile that should give them, or remove them from one of the profiles",
			len(decided.conflicts), strings.Join(shown, "; ")))
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionConflict)
	}
	// Installations this reconcile created or changed are not Ready yet.
	pending, created := 0, int32(0)
	for _, a := range decided.actions {
		switch a.kind {
		case actCreate:
			pending, created = pending+1, created+1
		case actUpdate:
			pending++
		}
	}
	switch {
	case len(decided.invalid) > 0:
		cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonValuesInvalid, "spec.extensions[].values of some extensions do not expand; the Stalled condition names them: fix those values")
	case pending == 0 && st.ReadyInstallations == st.Installations:
		cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
			fmt.Sprintf("%d installations on %d clusters are Ready", st.Installations, st.MatchingClusters))
	default:
		cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonProgressing,
			fmt.Sprintf("%d of %d installations on %d clusters are Ready", st.ReadyInstallations, st.Installations+created, st.MatchingClusters))
	}
	if equality.Semantic.DeepEqual(before.Status, *st) && !fenced {
		return nil
	}
	return r.Client.Status().Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// heldBack counts the clusters among held (installations held below
// their target version) and names the first rollout.MaxNamed, one entry
// per cluster, in the order of the cluster names.
func heldBack(held []v1alpha1.RolloutClusterState) (int32, []v1alpha1.RolloutClusterState) {
	sorted := slices.Clone(held)
	slices.SortStableFunc(sorted, func(a, b v1alpha1.RolloutClusterState) int { return strings.Compare(a.Cluster, b.Cluster) })
	sorted = slices.CompactFunc(sorted, func(a, b v1alpha1.RolloutClusterState) bool { return a.Cluster == b.Cluster })
	n := int32(len(sorted))
	if len(sorted) > rollout.MaxNamed {
		sorted = sorted[:rollout.MaxNamed]
	}
	if len(sorted) == 0 {
		sorted = nil
	}
	return n, sorted
}

// SetupWithManager watches profiles, the ManagedClusters they select (a
// change of what a profile reads of them may change the selection) and
// the installations they hold (batched: a profile's reconcile reads all of
// them, so their changes wake it at most once per batch.Window).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	allProfiles := func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list v1alpha1.ExtensionProfileList
		if err := r.Client.List(ctx, &list); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, p := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
		return out
	}
	// A catalog's new version within a range makes a new revision.
	namingExtension := func(ctx context.Context, o client.Object) []reconcile.Request {
		var list v1alpha1.ExtensionProfileList
		if err := r.Client.List(ctx, &list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, p := range list.Items {
			if slices.ContainsFunc(p.Spec.Extensions, func(e v1alpha1.ProfileExtension) bool { return e.Name == o.GetName() }) {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
			}
		}
		return out
	}
	approvalOf := func(_ context.Context, o client.Object) []reconcile.Request {
		if a, ok := o.(*v1alpha1.Approval); ok && a.Spec.Profile != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: a.Spec.Profile}}}
		}
		return nil
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("extensionprofile").
		For(&v1alpha1.ExtensionProfile{}).
		Watches(&v1alpha1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(allProfiles), builder.WithPredicates(clusterChangeMatters())).
		Watches(&v1alpha1.ExtensionInstallation{}, batch.New(batch.Window, profileNamedBy).Handler()).
		Watches(&v1alpha1.Extension{}, handler.EnqueueRequestsFromMapFunc(namingExtension)).
		Watches(&v1alpha1.Approval{}, handler.EnqueueRequestsFromMapFunc(approvalOf)).
		Complete(r)
}
