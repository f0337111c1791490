package installation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/render"
)

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
