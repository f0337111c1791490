// Package valuesfrom composes an installation's values: spec.values
// merged with the keys spec.valuesFrom names in Secrets and ConfigMaps,
// read through the uncached reader it is given. A reference to another
// namespace counts only when that namespace shares its values with the
// installation's (annotation annex.dev/share-values-with, which only the
// hub admin can set). It decides nothing else: the installation
// controller turns a Problem into its condition, and Sources is what its
// watch indexes, so that a changed source wakes its users.
package valuesfrom

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/values"
)

// Problem is why the values cannot be composed, for the user.
type Problem struct {
	// Wait: the source may appear or be shared later, and the
	// installation waits for it; otherwise the spec must change.
	Wait            bool
	Reason, Message string
}

func spec(reason, message string) *Problem { return &Problem{Reason: reason, Message: message} }
func waits(reason, message string) *Problem {
	return &Problem{Wait: true, Reason: reason, Message: message}
}

// Sources are the keys of what inst's valuesFrom read:
// "Secret/<namespace>/<name>", "ConfigMap/<namespace>/<name>", and
// "Namespace/<name>" for another namespace whose grant decides.
func Sources(inst *v1alpha1.ExtensionInstallation) []string {
	var keys []string
	for _, ref := range inst.Spec.ValuesFrom {
		ns := Namespace(inst, ref)
		keys = append(keys, ref.Kind+"/"+ns+"/"+ref.Name)
		if ns != inst.Namespace {
			keys = append(keys, "Namespace/"+ns)
		}
	}
	return keys
}

// Compose merges spec.values and spec.valuesFrom of inst, in that order,
// reading the sources through reader. A Problem says why they cannot be
// composed, in words for the user: a missing required source or a
// namespace that does not share its values waits (it may change later);
// values that are not a map, or a bad targetPath, are the spec's. Errors
// are the API server's.
func Compose(ctx context.Context, reader client.Reader, inst *v1alpha1.ExtensionInstallation) (map[string]any, *Problem, error) {
	composed := map[string]any{}
	if inst.Spec.Values != nil && len(inst.Spec.Values.Raw) > 0 {
		if err := json.Unmarshal(inst.Spec.Values.Raw, &composed); err != nil {
			return nil, spec(v1alpha1.ReasonValuesInvalid, fmt.Sprintf("spec.values: must be an object: %v; write spec.values as a map of keys to values", err)), nil
		}
	}
	for i, ref := range inst.Spec.ValuesFrom {
		field := fmt.Sprintf("spec.valuesFrom[%d]", i)
		ns := Namespace(inst, ref)
		if b, err := checkShared(ctx, reader, inst, ns, field); b != nil || err != nil {
			return nil, b, err
		}
		data, found, err := readValuesKey(ctx, reader, ns, ref)
		if err != nil {
			return nil, nil, err
		}
		if !found {
			if ref.Optional {
				continue
			}
			return nil, waits(v1alpha1.ReasonValuesSourceMissing, fmt.Sprintf(
				"%s: %s %s/%s has no key %q; create it, or mark the reference optional",
				field, ref.Kind, ns, ref.Name, keyOf(ref))), nil
		}
		if ref.TargetPath != "" {
			if err := values.Set(composed, ref.TargetPath, strings.TrimRight(string(data), "\n")); err != nil {
				return nil, spec(v1alpha1.ReasonValuesInvalid, fmt.Sprintf("%s.targetPath: %v; give a dotted path of keys, such as auth.password", field, err)), nil
			}
			continue
		}
		overlay, err := values.ParseYAML(data)
		if err != nil {
			return nil, spec(v1alpha1.ReasonValuesInvalid, fmt.Sprintf(
				"%s: key %q of %s %s/%s is not a YAML map of values: %v", field, keyOf(ref), ref.Kind, inst.Namespace, ref.Name, err)), nil
		}
		composed = values.Merge(composed, overlay)
	}
	return composed, nil, nil
}

// Namespace is the namespace a values reference reads from.
func Namespace(inst *v1alpha1.ExtensionInstallation, ref v1alpha1.ValuesReference) string {
	if ref.Namespace == "" {
		return inst.Namespace
	}
	return ref.Namespace
}

// checkShared refuses a reference to another namespace unless that
// namespace shares its values with the installation's (annotation
// annex.dev/share-values-with, which only the hub admin can set): a user
// who may create installations in one namespace must not read the Secrets
// of another through them.
func checkShared(ctx context.Context, reader client.Reader, inst *v1alpha1.ExtensionInstallation, ns, field string) (*Problem, error) {
	if ns == inst.Namespace {
		return nil, nil
	}
	source := &corev1.Namespace{}
	if err := reader.Get(ctx, types.NamespacedName{Name: ns}, source); err != nil {
		if apierrors.IsNotFound(err) {
			return waits(v1alpha1.ReasonValuesSourceMissing, fmt.Sprintf("%s.namespace: namespace %s does not exist; create it, or name the namespace that holds the values", field, ns)), nil
		}
		return nil, err
	}
	for _, grantee := range strings.Split(source.Annotations[v1alpha1.AnnotationShareValuesWith], ",") {
		if g := strings.TrimSpace(grantee); g == "*" || g == inst.Namespace {
			return nil, nil
		}
	}
	return waits(v1alpha1.ReasonValuesNotShared, fmt.Sprintf(
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
func readValuesKey(ctx context.Context, reader client.Reader, namespace string, ref v1alpha1.ValuesReference) ([]byte, bool, error) {
	key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	var data map[string][]byte
	switch ref.Kind {
	case "Secret":
		var sec corev1.Secret
		if err := reader.Get(ctx, key, &sec); err != nil {
			return nil, false, client.IgnoreNotFound(err)
		}
		data = sec.Data
	default:
		var cm corev1.ConfigMap
		if err := reader.Get(ctx, key, &cm); err != nil {
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
