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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1 "k8s.io/api/core/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/preflight"
	"github.com/annex-platform/annex/internal/rollout"
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
	toCluster := func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.(*v1alpha1.ExtensionInstallation).Spec.Cluster
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("managedcluster").
		For(&v1alpha1.ManagedCluster{}).
		Watches(&v1alpha1.ExtensionInstallation{}, handler.EnqueueRequestsFromMapFunc(toCluster)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.clustersUsingSecret),
			builder.OnlyMetadata).
		WithOptions(controller.Options{MaxConcurrentReconciles: probeWorkers}).
		Complete(r)
}

// clustersUsingSecret maps a Secret to the ManagedClusters whose
// kubeconfig it holds, and forgets their clients so that they reconnect.
func (r *Reconciler) clustersUsingSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.ManagedClusterList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, mc := range list.Items {
		ref := mc.Spec.KubeconfigSecretRef
		if ref.Namespace == o.GetNamespace() && ref.Name == o.GetName() {
			r.forget(mc.Name)
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: mc.Name}})
		}
	}
	return out
}
