// Package managedcluster reconciles ManagedClusters: it connects to each
// through its kubeconfig Secret, reports what it observes (Kubernetes
// version, nodes, the installations that target it and how many are
// Ready), and on deletion uninstalls — or, with deletionPolicy Orphan,
// releases — those installations before the cluster goes.
package managedcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1 "k8s.io/api/core/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/controller/batch"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/preflight"
	"github.com/annex-platform/annex/internal/rollout"
	"github.com/annex-platform/annex/internal/shard"
)

// Clusters is what the controller needs of the per-cluster clients; the
// consumer owns the interface, cmd wires internal/cluster's Registry.
type Clusters interface {
	// Probe reads the cluster's Kubernetes version and node count; an
	// error says why it cannot be reached.
	Probe(ctx context.Context, name string) (version string, nodes int, err error)
	// Forget drops the cluster's clients.
	Forget(name string)
}

// VersionObserver is told each cluster's Kubernetes version as probed
// (cluster.VersionWatcher).
type VersionObserver interface {
	Observed(ctx context.Context, cluster, version string)
}

// Fence is what the controller needs of the fence that admits the
// installation controller's work on a cluster (internal/shard's Fence).
type Fence interface {
	// Idle reports whether no admitted work is under way on the cluster.
	// Asked once the cluster is seen relabelled to another shard, true
	// means that none will be admitted again.
	Idle(cluster string) bool
}

// Leaders tells whether a shard has a live leader (internal/shard's
// Leases).
type Leaders interface {
	// Gone reports whether the shard has no live leader.
	Gone(ctx context.Context, shard string) (bool, error)
}

// Reconciler reconciles ManagedClusters.
type Reconciler struct {
	Client   client.Client
	Clusters Clusters
	// Events records what happens to ManagedClusters (reachable or not,
	// a new Kubernetes version, deletion); nil records none.
	Events events.EventRecorder
	// ProbeInterval is how often a cluster is probed again (default 30s);
	// an unreachable one is retried at the same pace.
	ProbeInterval time.Duration
	// Versions is told the Kubernetes version each probe read, so that a
	// cluster's upgrade re-resolves its installations; nil: nobody is.
	Versions VersionObserver
	// Shard is the shard of managers this one belongs to (default
	// shard.Default): it probes, and writes the status of, only the
	// clusters it serves, and claims and releases clusters as their
	// annex.dev/shard label says (see handover).
	Shard string
	// Fence counts the installation controller's work on each cluster; nil:
	// none is counted (no installation controller runs).
	Fence Fence
	// Leaders tells whether another shard still has a leader; nil: every
	// shard does, and its clusters wait for it to release them.
	Leaders Leaders

	mu     sync.Mutex
	probes map[string]probe // the last probe of each cluster
}

// probe is what the last probe of a cluster saw, for the generation of
// its ManagedCluster then.
type probe struct {
	at         time.Time
	generation int64
	version    string
	nodes      int
	err        error
}

// probeOf probes the cluster, unless it was probed for this generation
// less than half a probe interval ago: installations change often (each
// status write wakes the cluster to recount them), and recounting must
// not cost the cluster requests each time. (Half: the next probe comes at
// the cluster's slot, more than half an interval on; see nextProbe.)
func (r *Reconciler) probeOf(ctx context.Context, mc *v1alpha1.ManagedCluster) probe {
	r.mu.Lock()
	last, ok := r.probes[mc.Name]
	r.mu.Unlock()
	if ok && last.generation == mc.Generation && time.Since(last.at) < r.interval()/2 {
		return last
	}
	if ok && last.generation != mc.Generation {
		// Its spec changed, its kubeconfigSecretRef perhaps: the clients
		// the Registry keeps are built again.
		r.Clusters.Forget(mc.Name)
	}
	p := probe{at: time.Now(), generation: mc.Generation}
	p.version, p.nodes, p.err = r.Clusters.Probe(ctx, mc.Name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probes == nil {
		r.probes = map[string]probe{}
	}
	r.probes[mc.Name] = p
	return p
}

// forget drops the clients and the last probe of a cluster.
func (r *Reconciler) forget(name string) {
	r.Clusters.Forget(name)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.probes, name)
}

// indexCluster indexes installations by spec.cluster.
const indexCluster = "managedcluster.annex.dev/spec.cluster"

// indexKubeconfig indexes ManagedClusters by the namespace/name of their
// kubeconfig Secret.
const indexKubeconfig = "managedcluster.annex.dev/spec.kubeconfigSecretRef"

// +kubebuilder:rbac:groups=annex.dev,resources=managedclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=annex.dev,resources=managedclusters/status;managedclusters/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=annex.dev,resources=extensioninstallations,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// Reconcile probes the cluster and writes its status, or, when it is being
// deleted, removes its installations first.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mc := &v1alpha1.ManagedCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, mc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if res, serving, err := r.handover(ctx, mc); !serving || err != nil {
		return res, err
	}
	installations, err := r.installationsOf(ctx, mc.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !mc.DeletionTimestamp.IsZero() {
		return r.delete(ctx, mc, installations)
	}
	if !controllerutil.ContainsFinalizer(mc, v1alpha1.FinalizerClusterInstallations) {
		patch := client.MergeFrom(mc.DeepCopy())
		controllerutil.AddFinalizer(mc, v1alpha1.FinalizerClusterInstallations)
		if err := r.Client.Patch(ctx, mc, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	before := mc.DeepCopy()
	pr := r.probeOf(ctx, mc)
	if pr.err == nil && r.Versions != nil {
		r.Versions.Observed(ctx, mc.Name, pr.version)
	}
	setStatus(mc, observation{version: pr.version, nodes: pr.nodes, err: pr.err, installations: installations})
	setMaintenanceWindows(mc, rollout.ValidateWindows(mc.Spec.MaintenanceWindows))
	if err := r.checkUpgradeTarget(ctx, mc, installations); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.patchStatus(ctx, before, mc); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: nextProbe(mc.Name, time.Now(), r.interval())}, nil
}

// Handover pacing: how often a shard looks again at the work under way on
// a cluster it releases, and at the Lease of a shard it waits for.
const (
	drainPoll = 500 * time.Millisecond
	leasePoll = 2 * time.Second
)

// handover claims, releases or waits for the cluster as shard.Decide says,
// and reports whether this shard serves it; only then does the reconcile
// go on. Claims and releases are written conditionally on the
// resourceVersion they were decided on, so that two shards never both
// believe they serve a cluster; the status update they cause reconciles
// the cluster again.
func (r *Reconciler) handover(ctx context.Context, mc *v1alpha1.ManagedCluster) (ctrl.Result, bool, error) {
	me, serving := r.shard(), mc.Status.Shard
	gone := false
	if shard.Of(mc.Labels) == me && serving != "" && serving != me && r.Leaders != nil {
		var err error
		if gone, err = r.Leaders.Gone(ctx, serving); err != nil {
			return ctrl.Result{}, false, err
		}
	}
	switch action := shard.Decide(me, mc.Labels, serving, gone); action {
	case shard.Serve:
		return ctrl.Result{}, true, nil
	case shard.Claim, shard.TakeOver:
		return ctrl.Result{}, false, r.setServing(ctx, mc, me, "serving the cluster", "action", action.String(), "from", serving)
	case shard.Release:
		if r.Fence != nil && !r.Fence.Idle(mc.Name) {
			return ctrl.Result{RequeueAfter: drainPoll}, false, nil
		}
		failpoint.Hit(failpoint.ShardBeforeRelease, mc.Name)
		r.forget(mc.Name)
		return ctrl.Result{}, false, r.setServing(ctx, mc, "", "released the cluster to its new shard", "to", shard.Of(mc.Labels))
	case shard.Wait:
		return ctrl.Result{RequeueAfter: leasePoll}, false, nil
	default:
		return ctrl.Result{}, false, nil
	}
}

// setServing writes status.shard, conditional on the resourceVersion the
// decision was made on. A conflict is no error: the cluster changed (or
// the cache was behind the shard's own last write), and the update that
// changed it reconciles the cluster again, to decide anew.
// Once written, it logs msg with keysAndValues.
func (r *Reconciler) setServing(ctx context.Context, mc *v1alpha1.ManagedCluster, name, msg string, keysAndValues ...any) error {
	patch := client.MergeFromWithOptions(mc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	mc.Status.Shard = name
	if err := r.Client.Status().Patch(ctx, mc, patch); err != nil {
		if apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	log.FromContext(ctx).Info(msg, append([]any{"cluster", mc.Name, "shard", r.shard()}, keysAndValues...)...)
	return nil
}

func (r *Reconciler) shard() string {
	if r.Shard == "" {
		return shard.Default
	}
	return r.Shard
}

// observation is what one reconcile saw of a cluster.
type observation struct {
	version       string
	nodes         int
	err           error
	installations []v1alpha1.ExtensionInstallation
}

// setStatus computes the status from an observation: Reachable with the
// error a person can act on, the version and node count last seen (kept
// while unreachable), the installations and how many are Ready, and Ready
// as the summary.
func setStatus(mc *v1alpha1.ManagedCluster, o observation) {
	mc.Status.ObservedGeneration = mc.Generation
	mc.Status.Installations = int32(len(o.installations))
	mc.Status.ReadyInstallations = 0
	for i := range o.installations {
		if meta.IsStatusConditionTrue(o.installations[i].Status.Conditions, v1alpha1.ConditionReady) {
			mc.Status.ReadyInstallations++
		}
	}
	if o.err != nil {
		msg := fmt.Sprintf("cannot reach the cluster through Secret %s/%s key %q: %v; check that the API server is up and the kubeconfig's address and credentials are current",
			mc.Spec.KubeconfigSecretRef.Namespace, mc.Spec.KubeconfigSecretRef.Name, keyOf(mc), o.err)
		setCondition(mc, v1alpha1.ConditionReachable, metav1.ConditionFalse, v1alpha1.ReasonClusterUnavailable, msg)
		setCondition(mc, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonClusterUnavailable, msg)
		return
	}
	mc.Status.KubernetesVersion, mc.Status.NodeCount = o.version, int32(o.nodes)
	setCondition(mc, v1alpha1.ConditionReachable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("Kubernetes %s, %d nodes", o.version, o.nodes))
	setCondition(mc, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("reachable; %d of %d installations Ready", mc.Status.ReadyInstallations, mc.Status.Installations))
}

// setMaintenanceWindows reports spec.maintenanceWindows that cannot be
// read (invalid is rollout.ValidateWindows's verdict) with the condition
// MaintenanceWindows False, and removes the condition once they can: a
// True condition naming the next opening would be a status write per
// cluster at every opening. Ready does not change: the cluster works,
// only rollouts wait for it.
func setMaintenanceWindows(mc *v1alpha1.ManagedCluster, invalid error) {
	if invalid == nil {
		meta.RemoveStatusCondition(&mc.Status.Conditions, v1alpha1.ConditionMaintenanceWindows)
		return
	}
	setCondition(mc, v1alpha1.ConditionMaintenanceWindows, metav1.ConditionFalse, v1alpha1.ReasonInvalidMaintenanceWindow,
		invalid.Error()+"; until they are fixed, rollouts of profiles do not change the cluster")
}

// +kubebuilder:rbac:groups=annex.dev,resources=extensions,verbs=get;list;watch

// checkUpgradeTarget sets UpgradeReady from a preflight of the cluster's
// installations at spec.upgradeTarget, or removes it when none is set.
func (r *Reconciler) checkUpgradeTarget(ctx context.Context, mc *v1alpha1.ManagedCluster, installations []v1alpha1.ExtensionInstallation) error {
	if mc.Spec.UpgradeTarget == "" {
		meta.RemoveStatusCondition(&mc.Status.Conditions, v1alpha1.ConditionUpgradeReady)
		return nil
	}
	var exts v1alpha1.ExtensionList
	if err := r.Client.List(ctx, &exts); err != nil {
		return err
	}
	insts := make([]*v1alpha1.ExtensionInstallation, len(installations))
	for i := range installations {
		insts[i] = &installations[i]
	}
	report, err := preflight.Check(mc.Spec.UpgradeTarget, exts.Items, insts)
	if err != nil {
		setCondition(mc, v1alpha1.ConditionUpgradeReady, metav1.ConditionFalse, v1alpha1.ReasonUpgradeBlocked, "spec.upgradeTarget: "+err.Error()+"; give a Kubernetes version such as 1.37.1")
		return nil
	}
	setUpgradeReady(mc, report)
	return nil
}

// setUpgradeReady turns a preflight report into the UpgradeReady
// condition.
func setUpgradeReady(mc *v1alpha1.ManagedCluster, report preflight.Report) {
	if report.OK() {
		setCondition(mc, v1alpha1.ConditionUpgradeReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, report.Summary())
		return
	}
	setCondition(mc, v1alpha1.ConditionUpgradeReady, metav1.ConditionFalse, v1alpha1.ReasonUpgradeBlocked,
		report.Summary()+"; details: annexctl preflight --cluster "+mc.Name+" --kube-version "+mc.Spec.UpgradeTarget)
}

func setCondition(mc *v1alpha1.ManagedCluster, t string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: mc.Generation,
	})
}

func keyOf(mc *v1alpha1.ManagedCluster) string {
	if mc.Spec.KubeconfigSecretRef.Key == "" {
		return "kubeconfig"
	}
	return mc.Spec.KubeconfigSecretRef.Key
}

// delete removes the cluster's installations, then releases the cluster.
// With deletionPolicy Uninstall (the default) each installation is
// deleted, which uninstalls it from the cluster; the cluster waits until
// all are gone (an unreachable cluster waits: set deletionPolicy Orphan to
// give it up). With Orphan, each installation loses its uninstall
// finalizer first, so it leaves the hub without touching the cluster.
func (r *Reconciler) delete(ctx context.Context, mc *v1alpha1.ManagedCluster, installations []v1alpha1.ExtensionInstallation) (ctrl.Result, error) {
	orphan := mc.Spec.DeletionPolicy == v1alpha1.DeletionPolicyOrphan
	for i := range installations {
		inst := &installations[i]
		if orphan && controllerutil.ContainsFinalizer(inst, v1alpha1.FinalizerUninstall) {
			patch := client.MergeFrom(inst.DeepCopy())
			controllerutil.RemoveFinalizer(inst, v1alpha1.FinalizerUninstall)
			if err := r.Client.Patch(ctx, inst, patch); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		}
		if inst.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, inst); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		}
	}
	if len(installations) > 0 {
		before := mc.DeepCopy()
		how := "uninstalling"
		if orphan {
			how = "releasing (deletionPolicy Orphan)"
		}
		msg := fmt.Sprintf("deleting: %s %d installations first; a cluster that is gone for good can be released with spec.deletionPolicy: Orphan", how, len(installations))
		setCondition(mc, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonUninstalling, msg)
		mc.Status.Installations = int32(len(installations))
		if err := r.patchStatus(ctx, before, mc); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	r.forget(mc.Name)
	if controllerutil.ContainsFinalizer(mc, v1alpha1.FinalizerClusterInstallations) {
		patch := client.MergeFrom(mc.DeepCopy())
		controllerutil.RemoveFinalizer(mc, v1alpha1.FinalizerClusterInstallations)
		if err := r.Client.Patch(ctx, mc, patch); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// patchStatus writes the status if it changed, and tells what changed in
// Events and logs (see transitions).
func (r *Reconciler) patchStatus(ctx context.Context, before, mc *v1alpha1.ManagedCluster) error {
	if equality.Semantic.DeepEqual(before.Status, mc.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, mc, client.MergeFrom(before)); err != nil {
		return err
	}
	for _, n := range transitions(before.Status, mc.Status) {
		log.FromContext(ctx).Info(n.message, "event", n.reason, "type", n.eventType, "cluster", mc.Name)
		if r.Events != nil {
			r.Events.Eventf(mc, nil, n.eventType, n.reason, "Reconcile", "%s", n.message)
		}
	}
	return nil
}

func (r *Reconciler) installationsOf(ctx context.Context, cluster string) ([]v1alpha1.ExtensionInstallation, error) {
	var list v1alpha1.ExtensionInstallationList
	if err := r.Client.List(ctx, &list, client.MatchingFields{indexCluster: cluster}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

func (r *Reconciler) interval() time.Duration {
	if r.ProbeInterval > 0 {
		return r.ProbeInterval
	}
	return 30 * time.Second
}

// SetupWithManager watches ManagedClusters, their kubeconfig Secrets (a
// changed Secret reconnects) and the installations that target them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.ExtensionInstallation{}, indexCluster,
		func(o client.Object) []string { return []string{o.(*v1alpha1.ExtensionInstallation).Spec.Cluster} }); err != nil {
		return err
	}
	// A cluster's reconcile counts its installations' readiness into its
	// status: their changes wake it at most once per countsWindow, so that
	// a cluster whose installations change together writes its status once.
	clusterOf := func(o client.Object) (reconcile.Request, bool) {
		name := o.(*v1alpha1.ExtensionInstallation).Spec.Cluster
		return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}, name != ""
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.ManagedCluster{}, indexKubeconfig,
		func(o client.Object) []string {
			ref := o.(*v1alpha1.ManagedCluster).Spec.KubeconfigSecretRef
			return []string{ref.Namespace + "/" + ref.Name}
		}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("managedcluster").
		For(&v1alpha1.ManagedCluster{}, builder.WithPredicates(r.ofShard())).
		Watches(&v1alpha1.ExtensionInstallation{}, batch.New(countsWindow, clusterOf).Handler()).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.clustersUsingSecret),
			builder.OnlyMetadata).
		WithOptions(controller.Options{MaxConcurrentReconciles: probeWorkers}).
		Complete(r)
}

// countsWindow bounds how often a cluster's installations wake it. Their
// counts in its status are for people (kubectl get, the console, annexctl
// status), who do not miss ten seconds' lag in a summary, while each
// write is one of the hub's: waking per batch.Window, a cluster wrote its
// status about once per installation that became Ready (the fleet
// simulation at 100 × 10: 1,223 ManagedCluster status writes for 1,000
// installations, a quarter of the hub's writes). A cluster's deletion,
// which waits for its installations to go, sees the last of them at most
// this late.
const countsWindow = 10 * time.Second

// clustersUsingSecret maps a Secret to the ManagedClusters whose
// kubeconfig it holds, and forgets their clients so that they reconnect.
// Every Secret of the hub passes here (revision records among them, by
// the thousand in a fleet), so the clusters are found by index, not by
// reading every ManagedCluster.
func (r *Reconciler) clustersUsingSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.ManagedClusterList
	if err := r.Client.List(ctx, &list, client.MatchingFields{indexKubeconfig: o.GetNamespace() + "/" + o.GetName()},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, mc := range list.Items {
		r.forget(mc.Name)
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: mc.Name}})
	}
	return out
}

// ofShard passes the events of clusters that this shard owns by their
// label or serves, before or after the change: the others are another
// shard's business.
func (r *Reconciler) ofShard() predicate.Funcs {
	ours := func(o client.Object) bool {
		mc := o.(*v1alpha1.ManagedCluster)
		return shard.Of(mc.Labels) == r.shard() || mc.Status.Shard == r.shard()
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return ours(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return ours(e.ObjectOld) || ours(e.ObjectNew) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return ours(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return ours(e.Object) },
	}
}
