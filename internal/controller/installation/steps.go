package installation

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/render"
	"github.com/annex-platform/annex/internal/resolve"
)

// connect finds the target cluster, acting as the installation's
// ServiceAccount if it has one, and observes its Kubernetes version.
// Targets the manager does not allow stop here.
func (r *Reconciler) connect(ctx context.Context, s *scope) (ctrl.Result, error) {
	if b, err := r.checkTargets(ctx, s.inst); err != nil || b != nil {
		return r.stopAt(s, b, err)
	}
	target, err := r.Clusters.Target(ctx, s.inst.Spec.Cluster)
	if err == nil {
		var version string
		version, err = target.KubeVersion(ctx)
		if err == nil {
			acting, b, err := r.actAs(ctx, s.inst, target)
			if err != nil || b != nil {
				return r.stopAt(s, b, err)
			}
			s.target = acting
			s.inst.Status.ClusterVersion = version
			return ctrl.Result{}, nil
		}
	}
	name := s.inst.Spec.Cluster
	if name == "" {
		name = "the hub cluster"
	}
	s.block = retry(v1alpha1.ReasonClusterUnavailable,
		fmt.Sprintf("spec.cluster: cannot reach %s: %v; check the ManagedCluster and its kubeconfig Secret", name, err))
	return ctrl.Result{}, s.block
}

// checkDependencies waits until every dependency of the chosen version is
// installed, in range and Ready on the same cluster.
func (r *Reconciler) checkDependencies(ctx context.Context, s *scope) (ctrl.Result, error) {
	if len(s.choice.Version.Dependencies) == 0 {
		return ctrl.Result{}, nil
	}
	unmet := resolve.UnmetDependencies(s.inst.Spec.Extension, s.choice.Version, s.presentOthers())
	if len(unmet) == 0 {
		return ctrl.Result{}, nil
	}
	s.block = wait(v1alpha1.ReasonDependencyNotReady, strings.Join(unmet, "; "))
	// Dependencies announce their readiness through the watch on
	// installations; the periodic requeue is a safety net.
	return ctrl.Result{RequeueAfter: 30 * r.pollInterval()}, nil
}

// fetch downloads the chosen version's artifact.
func (r *Reconciler) fetch(ctx context.Context, s *scope) (ctrl.Result, error) {
	data, err := r.fetchArtifact(ctx, s)
	if err != nil {
		v := s.choice.Version
		prefix := fmt.Sprintf("fetching %s %s from %s", s.inst.Spec.Extension, v.Version, v.Source.URL)
		var mismatch digestMismatch
		var permanent interface{ Permanent() bool }
		switch {
		case errors.As(err, &mismatch):
			// The same bytes are refused every time: stop. A resync that
			// records the new digest changes the Extension, and a change of
			// the Extension wakes this installation (SetupWithManager).
			s.block = terminal(v1alpha1.ReasonDigestMismatch, digestMismatchMessage(prefix, v.Source.Catalog, mismatch))
		case errors.As(err, &permanent) && permanent.Permanent():
			// A hostile or oversized archive is refused the same way every
			// time: stop until the catalog or spec.version changes.
			s.block = terminal(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("%s: %v; choose another version with spec.version, or fix the chart in its catalog", prefix, err))
		default:
			s.block = retry(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("%s: %v; Annex tries again: check that this URL serves the artifact to the manager", prefix, err))
		}
		setCondition(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, s.block.reason, s.block.message)
		if s.block.kind == blockTerminal {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, s.block
	}
	s.archive, s.artifactDigest = data, digestOf(data)
	return ctrl.Result{}, nil
}

// digestMismatch is a fetch error for an artifact whose content is not the
// one its catalog indexed (the catalog package's DigestMismatchError): want
// is the digest the catalog recorded, got the content's.
type digestMismatch interface {
	Digests() (want, got string)
}

// digestMismatchMessage names both digests and the two ways out.
func digestMismatchMessage(prefix, catalogName string, mismatch digestMismatch) string {
	want, got := mismatch.Digests()
	recorder, resync := "the Extension", "update the Extension's digest"
	if catalogName != "" {
		recorder = fmt.Sprintf("catalog %q", catalogName)
		resync = fmt.Sprintf("resync catalog %q (it syncs every spec.interval, or at once when its spec changes) so that it records the new digest", catalogName)
	}
	return fmt.Sprintf("%s: the artifact has digest %s, but %s recorded %s: it changed after it was indexed. If the change is intended, %s and the installation goes on; otherwise choose another version with spec.version",
		prefix, got, recorder, want, resync)
}

// fetchArtifact downloads the chosen version's artifact: a chart's or a
// package's archive, or an operator bundle's registry+v1 tree, kept as
// files (s.bundle) and returned as its canonical JSON, which the
// revision's digest covers.
func (r *Reconciler) fetchArtifact(ctx context.Context, s *scope) ([]byte, error) {
	if !isBundle(s) {
		return r.Fetcher.FetchArtifact(ctx, s.choice.Version.Source)
	}
	files, err := r.Fetcher.FetchBundle(ctx, s.choice.Version.Source)
	if err != nil {
		return nil, err
	}
	s.bundle = files
	return json.Marshal(files) // map keys sorted: the same tree, the same bytes
}

// render composes the values and renders the artifact. Invalid values stop
// here, before anything touches the cluster.
func (r *Reconciler) render(ctx context.Context, s *scope) (ctrl.Result, error) {
	if isPackage(s) {
		return r.renderPackage(ctx, s)
	}
	if isBundle(s) {
		return r.renderBundle(ctx, s)
	}
	values, b, err := r.composeValues(ctx, s.inst)
	if err != nil {
		return ctrl.Result{}, err
	}
	if b != nil {
		s.block = b
		setCondition(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, b.reason, b.message)
		return ctrl.Result{RequeueAfter: 30 * r.pollInterval()}, nil
	}
	apiVersions, err := s.target.APIVersions(ctx)
	if err != nil {
		s.block = retry(v1alpha1.ReasonRenderFailed, fmt.Sprintf("reading the API versions of %s for .Capabilities.APIVersions: %v",
			clusterName(s.inst.Spec.Cluster), err))
		return ctrl.Result{}, s.block
	}
	start := time.Now()
	out, err := r.Renderer.Render(render.Input{
		Archive:      s.archive,
		Name:         s.inst.Name,
		Namespace:    s.targetNamespace(),
		Values:       values,
		KubeVersion:  s.inst.Status.ClusterVersion,
		APIVersions:  apiVersions,
		IsUpgrade:    s.inst.Status.InstalledVersion != "",
		ExtensionRef: s.inst.Spec.Extension + " " + s.choice.Version.Version,
	})
	metrics.ObserveRender(v1alpha1.EngineHelm, time.Since(start))
	if err != nil {
		s.block = describeRender(s, err)
		setCondition(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, s.block.reason, s.block.message)
		if s.block.kind == blockRetry {
			return ctrl.Result{}, s.block
		}
		return ctrl.Result{}, nil
	}
	s.rendered = out
	return ctrl.Result{}, nil
}

// composeValues merges spec.values and spec.valuesFrom, in that order. A
// missing required source is a wait block (it may be created later).
func (r *Reconciler) composeValues(ctx context.Context, inst *v1alpha1.ExtensionInstallation) (map[string]any, *block, error) {
	values := map[string]any{}
	if inst.Spec.Values != nil && len(inst.Spec.Values.Raw) > 0 {
		if err := json.Unmarshal(inst.Spec.Values.Raw, &values); err != nil {
			return nil, terminal(v1alpha1.ReasonValuesInvalid, fmt.Sprintf("spec.values: must be an object: %v; write spec.values as a map of keys to values", err)), nil
		}
	}
	for i, ref := range inst.Spec.ValuesFrom {
		field := fmt.Sprintf("spec.valuesFrom[%d]", i)
		ns := sourceNamespace(inst, ref)
		if b, err := r.checkShared(ctx, inst, ns, field); b != nil || err != nil {
			return nil, b, err
		}
		data, found, err := r.readValuesKey(ctx, ns, ref)
		if err != nil {
			return nil, nil, err
		}
		if !found {
			if ref.Optional {
				continue
			}
			return nil, wait(v1alpha1.ReasonValuesSourceMissing, fmt.Sprintf(
				"%s: %s %s/%s has no key %q; create it, or mark the reference optional",
				field, ref.Kind, ns, ref.Name, keyOf(ref))), nil
		}
		if ref.TargetPath != "" {
			if err := render.SetValue(values, ref.TargetPath, strings.TrimRight(string(data), "\n")); err != nil {
				return nil, terminal(v1alpha1.ReasonValuesInvalid, fmt.Sprintf("%s.targetPath: %v; give a dotted path of keys, such as auth.password", field, err)), nil
			}
			continue
		}
		overlay, err := render.ParseValuesYAML(data)
		if err != nil {
			return nil, terminal(v1alpha1.ReasonValuesInvalid, fmt.Sprintf(
				"%s: key %q of %s %s/%s is not a YAML map of values: %v", field, keyOf(ref), ref.Kind, inst.Namespace, ref.Name, err)), nil
		}
		values = render.MergeValues(values, overlay)
	}
	return values, nil, nil
}

// sourceNamespace is the namespace a values reference reads from.
func sourceNamespace(inst *v1alpha1.ExtensionInstallation, ref v1alpha1.ValuesReference) string {
	if ref.Namespace == "" {
		return inst.Namespace
	}
	return ref.Namespace
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// checkShared refuses a reference to another namespace unless that
// namespace shares its values with the installation's (annotation
// annex.dev/share-values-with, which only the hub admin can set): a user
// who may create installations in one namespace must not read the Secrets
// of another through them.
func (r *Reconciler) checkShared(ctx context.Context, inst *v1alpha1.ExtensionInstallation, ns, field string) (*block, error) {
	if ns == inst.Namespace {
		return nil, nil
	}
	source := &corev1.Namespace{}
	if err := r.Reader.Get(ctx, types.NamespacedName{Name: ns}, source); err != nil {
		if apierrors.IsNotFound(err) {
			return wait(v1alpha1.ReasonValuesSourceMissing, fmt.Sprintf("%s.namespace: namespace %s does not exist; create it, or name the namespace that holds the values", field, ns)), nil
		}
		return nil, err
	}
	for _, grantee := range strings.Split(source.Annotations[v1alpha1.AnnotationShareValuesWith], ",") {
		if g := strings.TrimSpace(grantee); g == "*" || g == inst.Namespace {
			return nil, nil
		}
	}
	return wait(v1alpha1.ReasonValuesNotShared, fmt.Sprintf(
		"%s.namespace: namespace %s does not share its values with namespace %s; a hub admin grants it by annotating namespace %s with %s: %q",
		field, ns, inst.Namespace, ns, v1alpha1.AnnotationShareValuesWith, inst.Namespace)), nil
}

func keyOf(ref v1alpha1.ValuesReference) string {
	if ref.Key == "" {
		return "values.yaml"
	}
	return ref.Key
}

// readValuesKey reads one key of a Secret or ConfigMap; found is false when
// the object or the key does not exist.
func (r *Reconciler) readValuesKey(ctx context.Context, namespace string, ref v1alpha1.ValuesReference) ([]byte, bool, error) {
	key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	var data map[string][]byte
	switch ref.Kind {
	case "Secret":
		var sec corev1.Secret
		if err := r.Reader.Get(ctx, key, &sec); err != nil {
			return nil, false, client.IgnoreNotFound(err)
		}
		data = sec.Data
	default:
		var cm corev1.ConfigMap
		if err := r.Reader.Get(ctx, key, &cm); err != nil {
			return nil, false, client.IgnoreNotFound(err)
		}
		data = map[string][]byte{}
		for k, v := range cm.Data {
			data[k] = []byte(v)
		}
		for k, v := range cm.BinaryData {
			data[k] = v
		}
	}
	v, ok := data[keyOf(ref)]
	return v, ok, nil
}

// apply writes the rendered set, records it, and prunes what left it. An
// unchanged set of the same generation is not applied again; its drift is
// checked instead.
func (r *Reconciler) apply(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	if runsPlans(s) {
		return r.runPackage(ctx, s)
	}
	if isFailedTarget(s) {
		return r.holdFailed(ctx, s)
	}
	if r.upToDate(s) {
		s.inventory = inst.Status.Inventory
		return r.checkDrift(ctx, s, Set{CRDs: s.rendered.CRDs, Objects: r.objectsToApply(ctx, s, false)})
	}
	set := Set{CRDs: s.rendered.CRDs, Objects: r.objectsToApply(ctx, s, true)}
	applier := s.target.Applier()
	rev := r.nextRevision(s)

	// Record the intent first, so that a crash at any instant leaves
	// nothing unowned and the next reconcile resumes (see writeIntent).
	if err := r.writeIntent(ctx, s, &rev, set); err != nil {
		return ctrl.Result{}, ignoreRefused(err)
	}
	failpoint.Hit(failpoint.AfterIntent, s.owner().String())
	inst.Status.Pending = &rev
	if hasHooks(set) {
		// Hooks may run for minutes: show what is being applied meanwhile.
		if err := r.persist(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}

	start, op := time.Now(), metrics.OpInstall
	if inst.Status.InstalledVersion != "" {
		op = metrics.OpUpgrade
	}
	applied, err := applier.Apply(ctx, s.owner(), s.targetNamespace(), set, ApplyOptions{
		IsUpgrade:     inst.Status.InstalledVersion != "",
		HookTimeout:   timeoutOf(inst),
		TakeOwnership: inst.Spec.TakeOwnership,
	})
	metrics.ObserveApply(op, time.Since(start))
	recordChartPlan(inst, applied.Plan, rev)
	if b := r.permissionBlock(inst, err); b != nil {
		// Not a failed attempt: nothing is wrong with the extension.
		return r.stopAt(s, b, nil)
	}
	if err != nil {
		b := applyBlock(err)
		if b.kind == blockRetry && countsAsFailedAttempt(err) {
			return r.attemptFailed(ctx, s, b.reason, b.message)
		}
		s.block = b
		setCondition(inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, s.block.reason, s.block.message)
		if s.block.kind == blockRetry {
			return ctrl.Result{}, s.block
		}
		return ctrl.Result{}, nil
	}
	failpoint.Hit(failpoint.AfterObjects, s.owner().String())
	if _, err := applier.Prune(ctx, s.owner(), inst.Status.Inventory, applied.Inventory); err != nil {
		s.block = retry(v1alpha1.ReasonApplyFailed, fmt.Sprintf("pruning objects that left %s %s: %v", inst.Spec.Extension, s.choice.Version.Version, err))
		return ctrl.Result{}, s.block
	}
	if err := r.trimRecords(ctx, s, rev.Number); err != nil {
		return ctrl.Result{}, err
	}
	s.showPermissions(set)
	r.record(s, applied.Inventory, rev, "")
	failpoint.Hit(failpoint.AfterEvent, s.owner().String())
	s.observe(applied.Health)
	return ctrl.Result{}, nil
}

// recordChartPlan shows a chart's apply as its plan, down to its steps
// (its phases and hook weights): named install or upgrade, for the
// revision it applied.
func recordChartPlan(inst *v1alpha1.ExtensionInstallation, st *v1alpha1.PlanStatus, rev v1alpha1.Revision) {
	if st == nil {
		return
	}
	out := *st.DeepCopy()
	out.Name, out.Trigger, out.Revision = "install", "install", rev.Number
	if installed := inst.Status.InstalledVersion; installed != "" {
		out.Name, out.Trigger = "upgrade", fmt.Sprintf("upgrade %s → %s", installed, rev.Version)
		if installed == rev.Version {
			out.Trigger = "new values or chart content"
		}
	}
	inst.Status.Plans = []v1alpha1.PlanStatus{out}
}

// hasHooks reports whether set holds Helm hooks, which the apply runs and
// awaits.
func hasHooks(set Set) bool {
	for _, o := range set.Objects {
		if _, ok := o.GetAnnotations()["helm.sh/hook"]; ok {
			return true
		}
	}
	return false
}

// nextRevision describes the revision this reconcile applies, numbered
// one above the recorded revision (writeIntent may number it higher).
func (r *Reconciler) nextRevision(s *scope) v1alpha1.Revision {
	var number int64 = 1
	if len(s.inst.Status.History) > 0 {
		number = s.inst.Status.History[0].Number + 1
	}
	return v1alpha1.Revision{
		Number:         number,
		Version:        s.choice.Version.Version,
		ArtifactDigest: s.artifactDigest,
		ValuesDigest:   s.rendered.ValuesDigest,
		ManifestDigest: s.rendered.ManifestDigest,
		AppliedAt:      metav1.NewTime(r.now()),
	}
}

// checkDrift compares the cluster with the installed revision, once the
// installation is Ready. Nothing drifted costs reads only. Enabled corrects
// drift (and recreates deleted objects); Warn lists it.
func (r *Reconciler) checkDrift(ctx context.Context, s *scope, set Set) (ctrl.Result, error) {
	inst := s.inst
	mode := inst.Spec.DriftDetection
	if mode == v1alpha1.DriftDetectionDisabled || !s.wasReady {
		if mode == v1alpha1.DriftDetectionDisabled {
			inst.Status.Drifted = nil
		}
		return ctrl.Result{}, nil
	}
	applier := s.target.Applier()
	drifts, health, err := applier.Diff(ctx, s.owner(), s.targetNamespace(), set)
	if err != nil {
		s.block = retry(v1alpha1.ReasonApplyFailed, fmt.Sprintf("comparing the cluster with revision %d: %v", inst.Status.History[0].Number, err))
		return ctrl.Result{}, s.block
	}
	s.observe(health)
	found := driftedObjects(drifts)
	if len(found) == 0 {
		inst.Status.Drifted = nil
		return ctrl.Result{}, nil
	}
	if mode == v1alpha1.DriftDetectionWarn {
		if !equality.Semantic.DeepEqual(found, inst.Status.Drifted) {
			r.event(s, corev1.EventTypeWarning, "Drifted", "objects differ from the installed revision (driftDetection: Warn): "+describeDrift(found))
		}
		inst.Status.Drifted = found
		return ctrl.Result{}, nil
	}
	// The drifted objects are in the inventory, so Annex owns them: fields
	// another manager took over since are taken back (objects of another
	// installation are still refused).
	start := time.Now()
	corrected, err := applier.Apply(ctx, s.owner(), s.targetNamespace(), set, ApplyOptions{SkipHooks: true, TakeOwnership: true})
	metrics.ObserveApply(metrics.OpDriftCorrection, time.Since(start))
	if err != nil {
		s.observedHealth = nil
		s.block = cmp.Or(r.permissionBlock(inst, err), applyBlock(err))
		s.block.message = "correcting drift: " + s.block.message
		inst.Status.Drifted = found
		if s.block.kind == blockRetry {
			return ctrl.Result{}, s.block
		}
		return ctrl.Result{}, nil
	}
	inst.Status.Drifted = nil
	s.observe(corrected.Health)
	metrics.DriftCorrected(inst.Spec.Cluster)
	r.event(s, corev1.EventTypeNormal, "DriftCorrected", "restored objects that differed from the installed revision: "+describeDrift(found))
	return ctrl.Result{}, nil
}

func driftedObjects(drifts []Drift) []v1alpha1.DriftedObject {
	out := make([]v1alpha1.DriftedObject, 0, len(drifts))
	for _, d := range drifts {
		fields := d.Fields
		if d.Missing {
			fields = []string{"deleted"}
		}
		out = append(out, v1alpha1.DriftedObject{ObjectReference: d.Object, Fields: fields})
	}
	return out
}

func describeDrift(objs []v1alpha1.DriftedObject) string {
	parts := make([]string, 0, len(objs))
	for i, o := range objs {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(objs)-5))
			break
		}
		name := o.Name
		if o.Namespace != "" {
			name = o.Namespace + "/" + o.Name
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", o.Kind, name, strings.Join(o.Fields, ", ")))
	}
	return strings.Join(parts, "; ")
}

func timeoutOf(inst *v1alpha1.ExtensionInstallation) time.Duration {
	if inst.Spec.Timeout.Duration > 0 {
		return inst.Spec.Timeout.Duration
	}
	return defaultTimeout
}

// upToDate reports whether the recorded revision was made from this exact
// artifact and these effective values, for the current generation. Inputs,
// not the rendered output, decide: a chart that generates a certificate or a
// random password renders differently every time and must not be re-applied
// (and its secrets rotated) on every reconcile.
func (r *Reconciler) upToDate(s *scope) bool {
	inst := s.inst
	if len(inst.Status.History) == 0 || inst.Status.InstalledVersion != s.choice.Version.Version {
		return false
	}
	last := inst.Status.History[0]
	installed := findCondition(inst, v1alpha1.ConditionInstalled)
	return last.ArtifactDigest == s.artifactDigest &&
		last.ValuesDigest == s.rendered.ValuesDigest &&
		installed != nil && installed.Status == metav1.ConditionTrue &&
		installed.ObservedGeneration == inst.Generation
}

// objectsToApply returns the rendered objects, with the target namespace
// in front when Annex creates it (see createdNamespace). With mayCreate, a
// target namespace that does not exist yet on the target cluster is
// added too; only an apply needs that answer, so only an apply pays for
// the read.
func (r *Reconciler) objectsToApply(ctx context.Context, s *scope, mayCreate bool) []*unstructured.Unstructured {
	return r.withTargetNamespace(ctx, s, s.rendered.Objects, mayCreate)
}

// withTargetNamespace returns objects with the target namespace in front
// when Annex creates it, unless objects bring that Namespace themselves.
// The applier applies it before anything else (apply.Plan), so that every
// hook and object finds its namespace, as with helm install
// --create-namespace.
func (r *Reconciler) withTargetNamespace(ctx context.Context, s *scope, objects []*unstructured.Unstructured, mayCreate bool) []*unstructured.Unstructured {
	if len(namespaceIn(objects, s.targetNamespace())) > 0 {
		return objects
	}
	return slices.Concat(r.createdNamespace(ctx, s, mayCreate), objects)
}

// createdNamespace returns the target namespace, as the one object to
// apply, when Annex creates it: an earlier revision created it (it is in
// the inventory), so that it stays recorded and is removed with the rest;
// or, with mayCreate, it does not exist on the target cluster. It returns
// none otherwise: on the hub the installation's own namespace exists, and
// a namespace someone else made is theirs.
func (r *Reconciler) createdNamespace(ctx context.Context, s *scope, mayCreate bool) []*unstructured.Unstructured {
	ns := s.targetNamespace()
	if ns == s.inst.Namespace && s.inst.Spec.Cluster == "" {
		return nil
	}
	created := []*unstructured.Unstructured{namespaceObject(ns)}
	for _, ref := range s.inst.Status.Inventory {
		if ref.Kind == "Namespace" && ref.Group == "" && ref.Name == ns {
			return created
		}
	}
	if !mayCreate {
		return nil
	}
	if exists, err := s.target.NamespaceExists(ctx, ns); err == nil && !exists {
		return created
	}
	return nil
}

// namespaceIn returns the Namespace name among objs (not a hook), or none.
func namespaceIn(objs []*unstructured.Unstructured, name string) []*unstructured.Unstructured {
	for _, o := range objs {
		if isNamespaceNamed(o, name) {
			return []*unstructured.Unstructured{o}
		}
	}
	return nil
}

// isNamespaceNamed reports whether obj is the Namespace name, and not a
// Helm hook.
func isNamespaceNamed(obj *unstructured.Unstructured, name string) bool {
	_, hook := obj.GetAnnotations()["helm.sh/hook"]
	return !hook && obj.GetAPIVersion() == "v1" && obj.GetKind() == "Namespace" && obj.GetName() == name
}

func namespaceObject(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(name)
	return u
}

// record writes the applied revision into status and has the reconcile
// tell it in an Event when it ends (reason "" picks Installed or Upgraded).
func (r *Reconciler) record(s *scope, applied []v1alpha1.ObjectReference, rev v1alpha1.Revision, reason string) {
	inst := s.inst
	history := append([]v1alpha1.Revision{rev}, inst.Status.History...)
	if len(history) > r.historyLimit() {
		history = history[:r.historyLimit()]
	}
	upgraded := inst.Status.InstalledVersion != "" && inst.Status.InstalledVersion != rev.Version
	inst.Status.History = history
	inst.Status.Pending = nil
	s.recorded = true
	inst.Status.InstalledVersion = rev.Version
	inst.Status.Inventory, inst.Status.InventoryCount = applied, int32(len(applied))
	s.inventory = applied
	msg := fmt.Sprintf("applied %s %s (revision %d, %d objects)", inst.Spec.Extension, rev.Version, rev.Number, len(applied))
	setCondition(inst, v1alpha1.ConditionInstalled, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, msg)
	switch {
	case reason != "":
	case upgraded:
		reason = "Upgraded"
	default:
		reason = "Installed"
	}
	s.applied = &note{corev1.EventTypeNormal, reason, msg}
}

// waitHealthy reads the health of the applied objects; it waits, polling,
// until they are healthy, and reports Stalled after spec.timeout. When
// this reconcile's apply or drift check has just seen every object, it
// takes the health from what they saw instead of reading everything again.
func (r *Reconciler) waitHealthy(ctx context.Context, s *scope) (ctrl.Result, error) {
	var h Health
	if s.observedHealth != nil {
		h = *s.observedHealth
	} else {
		var err error
		if h, err = s.target.Applier().Health(ctx, s.inventory); err != nil {
			s.block = retry(v1alpha1.ReasonWaitingForHealth, fmt.Sprintf("reading the health of the applied objects: %v", err))
			return ctrl.Result{}, s.block
		}
	}
	if isBundle(s) {
		s.observeResources(h, s.inventory)
	}
	if h.Ready {
		s.healthy = true
		s.inst.Status.Failures, s.inst.Status.FailedTarget = 0, nil
		s.inst.Status.LastHealthyRevision = s.inst.Status.History[0].Number
		return ctrl.Result{}, nil
	}
	since := s.inst.Status.History[0].AppliedAt.Time
	timeout := timeoutOf(s.inst)
	if runsPlans(s) {
		// A package's plans waited for health step by step; what is not
		// healthy now broke afterwards, and rolling back plans is not
		// Annex's to decide.
		s.block = wait(v1alpha1.ReasonWaitingForHealth, h.Summary)
		if h.Failed || r.now().Sub(since) > timeout {
			s.block = &block{kind: blockStalled, reason: v1alpha1.ReasonHealthTimeout, message: h.Summary}
		}
		return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
	}
	if h.Failed || r.now().Sub(since) > timeout {
		return r.attemptFailed(ctx, s, v1alpha1.ReasonHealthTimeout, fmt.Sprintf(
			"not healthy within spec.timeout (%s): %s", timeout, h.Summary))
	}
	s.block = wait(v1alpha1.ReasonWaitingForHealth, h.Summary)
	return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
}

// defaultTimeout is the API's default spec.timeout, for objects written
// before the default existed.
const defaultTimeout = 5 * time.Minute

// stopAt records b (or err) as why the installation cannot go on: a wait
// polls, a terminal block stops, a retry or an error backs off.
func (r *Reconciler) stopAt(s *scope, b *block, err error) (ctrl.Result, error) {
	if err != nil {
		return ctrl.Result{}, err
	}
	s.block = b
	setCondition(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, b.reason, b.message)
	switch b.kind {
	case blockRetry:
		return ctrl.Result{}, b
	case blockWait:
		return ctrl.Result{RequeueAfter: 30 * r.pollInterval()}, nil
	}
	return ctrl.Result{}, nil
}

// applyBlock classifies an apply error: ownership conflicts are terminal,
// a failed hook and everything else are retried with backoff.
func applyBlock(err error) *block {
	var conflict interface{ OwnershipConflict() bool }
	if errors.As(err, &conflict) && conflict.OwnershipConflict() {
		return terminal(v1alpha1.ReasonOwnershipConflict, err.Error())
	}
	var hook interface{ HookFailed() bool }
	if errors.As(err, &hook) && hook.HookFailed() {
		return retry(v1alpha1.ReasonHookFailed, err.Error())
	}
	return retry(v1alpha1.ReasonApplyFailed, err.Error())
}

// unionRefs returns old plus every ref of add not in old, sorted, and
// whether anything was added.
func unionRefs(old, add []v1alpha1.ObjectReference) ([]v1alpha1.ObjectReference, bool) {
	seen := map[v1alpha1.ObjectReference]bool{}
	out := make([]v1alpha1.ObjectReference, 0, len(old)+len(add))
	for _, ref := range old {
		seen[identity(ref)] = true
		out = append(out, ref)
	}
	grew := false
	for _, ref := range add {
		if !seen[identity(ref)] {
			seen[identity(ref)] = true
			out = append(out, ref)
			grew = true
		}
	}
	sort.Slice(out, func(i, j int) bool { return refKey(out[i]) < refKey(out[j]) })
	return out, grew
}

// identity drops the version: the same object may be recorded under two
// versions of its kind.
func identity(ref v1alpha1.ObjectReference) v1alpha1.ObjectReference {
	ref.Version = ""
	return ref
}

func refKey(ref v1alpha1.ObjectReference) string {
	return ref.Group + "/" + ref.Kind + "/" + ref.Namespace + "/" + ref.Name
}

// digestOf returns "sha256:<hex>" of data.
func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func findCondition(inst *v1alpha1.ExtensionInstallation, t string) *metav1.Condition {
	for i := range inst.Status.Conditions {
		if inst.Status.Conditions[i].Type == t {
			return &inst.Status.Conditions[i]
		}
	}
	return nil
}
