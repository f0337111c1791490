package installation

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/values"
)

// render has the chosen version's engine make its release: a chart's
// objects, or a package's or bundle's plans, of which it chooses those
// this change runs (choosePlans) and renders them. Invalid values and
// broken artifacts stop here, before anything touches the cluster.
func (r *Reconciler) render(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	facts := &engineFacts{ctx: ctx, r: r, s: s}
	rel, err := r.engine(s.choice.Version.Engine).Render(ctx, engine.Input{
		Artifact:       s.artifact.data,
		ArtifactDigest: s.artifact.digest,
		Ref:            inst.Spec.Extension + " " + s.choice.Version.Version,
		Name:           inst.Name,
		Namespace:      s.targetNamespace(),
		KubeVersion:    inst.Status.ClusterVersion,
		// An adoption renders the chart as the release's next helm
		// upgrade would.
		IsUpgrade:       inst.Status.InstalledVersion != "" || adopting(inst),
		WatchNamespaces: inst.Spec.WatchNamespaces,
		Resources:       inst.Spec.Resources,
		Facts:           facts,
	})
	if rel != nil {
		s.artifact.digest = rel.ArtifactDigest
		listPlans(inst, rel.PlanNames)
	}
	switch {
	case facts.valuesBlock != nil:
		return r.stop(s, facts.valuesBlock, ctrl.Result{RequeueAfter: 30 * r.pollInterval()})
	case facts.apiVersionsErr != nil:
		// Not the artifact's fault: the Installed condition stays.
		s.block = retry(v1alpha1.ReasonRenderFailed, fmt.Sprintf("reading the API versions of %s for .Capabilities.APIVersions: %v",
			clusterName(inst.Spec.Cluster), facts.apiVersionsErr))
		return ctrl.Result{}, s.block
	}
	if err != nil {
		var refused *engine.Error
		var b *block
		switch {
		case errors.As(err, &refused) && refused.Retry:
			return r.stop(s, retry(refused.Reason, refused.Message), ctrl.Result{})
		case errors.As(err, &refused) && adopting(inst):
			return r.stop(s, terminal(refused.Reason, fmt.Sprintf(
				"%s; the chart does not render with the values of Helm release %s (spec.values, copied from it) that spec.adopt names: change spec.values, or fix the release with helm upgrade and adopt it again",
				refused.Message, inst.Spec.Adopt.Helm.Release)), ctrl.Result{})
		case errors.As(err, &refused):
			return r.stop(s, terminal(refused.Reason, refused.Message), ctrl.Result{})
		case errors.As(err, &b):
			return r.stop(s, b, ctrl.Result{})
		}
		return ctrl.Result{}, err
	}
	if rel.Inputs != nil {
		if rel.ValuesDigest, err = values.Digest(withScopedGrants(inst, rel.Inputs)); err != nil {
			return ctrl.Result{}, err
		}
	}
	s.artifact.release = rel
	s.artifact.resources = s.resourceRefs(rel.Resources)
	if rel.Resumable() {
		if res, err := r.renderPlans(ctx, s); err != nil || s.block != nil {
			return res, err
		}
	}
	if len(rel.Warnings) > 0 {
		setCondition(inst, v1alpha1.ConditionWarnings, metav1.ConditionTrue, "PackageWarnings", strings.Join(rel.Warnings, "; "))
	} else if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionWarnings); c == nil || c.Reason != v1alpha1.ReasonCRDChangeWarnings {
		// What the last change did with its CRDs stays until the next
		// change is judged (checkCRDs).
		meta.RemoveStatusCondition(&inst.Status.Conditions, v1alpha1.ConditionWarnings)
	}
	return ctrl.Result{}, nil
}

// engine returns the engine of name; "" is a Helm chart, and so is a
// name the manager wires no engine for (the API admits none).
func (r *Reconciler) engine(name v1alpha1.Engine) Engine {
	if e, ok := r.Engines[name]; ok {
		return e
	}
	return r.Engines[v1alpha1.EngineHelm]
}

// engineFacts answers an engine's questions for one reconcile. A values
// source that blocks, or API versions that cannot be read, are kept to
// be reported as the controller's, not the engine's.
type engineFacts struct {
	ctx context.Context
	r   *Reconciler
	s   *scope

	valuesBlock    *block
	apiVersionsErr error
}

func (f *engineFacts) Values() (map[string]any, error) {
	composed, b, err := f.r.composeValues(f.ctx, f.s.inst)
	if b != nil {
		f.valuesBlock = b
		return nil, b
	}
	return composed, err
}

func (f *engineFacts) APIVersions() ([]string, error) {
	versions, err := f.s.target.APIVersions(f.ctx)
	if err != nil {
		f.apiVersionsErr = err
	}
	return versions, err
}

func (f *engineFacts) InstalledParams() (map[string]any, error) {
	prev, err := f.r.installedState(f.ctx, f.s)
	return decodePackageRecord(prev.pkg).Params, err
}

func (f *engineFacts) Secret(namespace, name string) (map[string][]byte, error) {
	stub := &unstructured.Unstructured{}
	stub.SetAPIVersion("v1")
	stub.SetKind("Secret")
	stub.SetNamespace(namespace)
	stub.SetName(name)
	live, err := f.s.target.Applier().Live(f.ctx, namespace, []*unstructured.Unstructured{stub})
	if err != nil || len(live) == 0 {
		return nil, err
	}
	encoded, _, _ := unstructured.NestedStringMap(live[0].Object, "data")
	data := make(map[string][]byte, len(encoded))
	for k, v := range encoded {
		if data[k], err = base64.StdEncoding.DecodeString(v); err != nil {
			return nil, fmt.Errorf("secret %s/%s: key %s: %w", namespace, name, k, err)
		}
	}
	return data, nil
}

func (f *engineFacts) Now() time.Time {
	if f.r.CertificateClock != nil {
		return f.r.CertificateClock()
	}
	return f.r.now()
}

func (f *engineFacts) Base(name, versionRange string) (v1alpha1.ExtensionVersion, error) {
	v, b := chooseBase(f.s.cluster.extensions, name, versionRange)
	if b != nil {
		return v1alpha1.ExtensionVersion{}, b
	}
	return *v, nil
}

// composeValues merges spec.values and spec.valuesFrom, in that order. A
// missing required source is a wait block (it may be created later).
func (r *Reconciler) composeValues(ctx context.Context, inst *v1alpha1.ExtensionInstallation) (map[string]any, *block, error) {
	composed := map[string]any{}
	if inst.Spec.Values != nil && len(inst.Spec.Values.Raw) > 0 {
		if err := json.Unmarshal(inst.Spec.Values.Raw, &composed); err != nil {
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
			if err := values.Set(composed, ref.TargetPath, strings.TrimRight(string(data), "\n")); err != nil {
				return nil, terminal(v1alpha1.ReasonValuesInvalid, fmt.Sprintf("%s.targetPath: %v; give a dotted path of keys, such as auth.password", field, err)), nil
			}
			continue
		}
		overlay, err := values.ParseYAML(data)
		if err != nil {
			return nil, terminal(v1alpha1.ReasonValuesInvalid, fmt.Sprintf(
				"%s: key %q of %s %s/%s is not a YAML map of values: %v", field, keyOf(ref), ref.Kind, inst.Namespace, ref.Name, err)), nil
		}
		composed = values.Merge(composed, overlay)
	}
	return composed, nil, nil
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
