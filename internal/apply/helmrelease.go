package apply

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/adopt"
)

// Helm release storage, read and retired for an adoption: the applier
// is the one client of a cluster, and what the storage holds is decoded
// by internal/adopt.

// HelmRelease reads every revision of Helm release name from its storage
// in namespace: its Secrets (Helm's default driver), else its ConfigMaps.
// driver is "secret" or "configmap"; revisions is empty when the release
// has neither. A revision that cannot be decoded is an error naming its
// storage object.
func (a *Applier) HelmRelease(ctx context.Context, namespace, name string) (revisions []*adopt.Release, driver string, err error) {
	selector := client.MatchingLabels{adopt.LabelOwner: adopt.Owner, adopt.LabelName: name}
	var secrets corev1.SecretList
	if err := a.Client.List(ctx, &secrets, client.InNamespace(namespace), selector); err != nil {
		return nil, "", fmt.Errorf("listing the Helm release Secrets of namespace %s: %w", namespace, err)
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if s.Type != adopt.SecretType || !adopt.IsStorage(s.Name, s.Labels) {
			continue
		}
		r, err := adopt.DecodeSecret(s)
		if err != nil {
			return nil, "", err
		}
		revisions = append(revisions, r)
	}
	if len(revisions) > 0 {
		return revisions, "secret", nil
	}
	var cms corev1.ConfigMapList
	if err := a.Client.List(ctx, &cms, client.InNamespace(namespace), selector); err != nil {
		return nil, "", fmt.Errorf("listing the Helm release ConfigMaps of namespace %s: %w", namespace, err)
	}
	for i := range cms.Items {
		cm := &cms.Items[i]
		if !adopt.IsStorage(cm.Name, cm.Labels) {
			continue
		}
		r, err := adopt.DecodeConfigMap(cm)
		if err != nil {
			return nil, "", err
		}
		revisions = append(revisions, r)
	}
	return revisions, "configmap", nil
}

// RetireHelmRelease deletes the storage of every revision of Helm release
// name in namespace (Secrets and ConfigMaps labelled owner=helm and
// name=NAME, named sh.helm.release.v1.NAME.vN), so that Helm no longer
// knows the release: helm list does not show it, and helm uninstall or
// upgrade cannot touch what Annex adopted. It returns how many it
// deleted; objects already gone count as deleted.
func (a *Applier) RetireHelmRelease(ctx context.Context, namespace, name string) (int, error) {
	selector := client.MatchingLabels{adopt.LabelOwner: adopt.Owner, adopt.LabelName: name}
	var doomed []client.Object
	var secrets corev1.SecretList
	if err := a.Client.List(ctx, &secrets, client.InNamespace(namespace), selector); err != nil {
		return 0, fmt.Errorf("listing the Helm release Secrets of namespace %s: %w", namespace, err)
	}
	for i := range secrets.Items {
		if s := &secrets.Items[i]; s.Type == adopt.SecretType && adopt.IsStorage(s.Name, s.Labels) {
			doomed = append(doomed, s)
		}
	}
	var cms corev1.ConfigMapList
	if err := a.Client.List(ctx, &cms, client.InNamespace(namespace), selector); err != nil {
		return 0, fmt.Errorf("listing the Helm release ConfigMaps of namespace %s: %w", namespace, err)
	}
	for i := range cms.Items {
		if cm := &cms.Items[i]; adopt.IsStorage(cm.Name, cm.Labels) {
			doomed = append(doomed, cm)
		}
	}
	var errs []error
	for _, obj := range doomed {
		// Only the object listed: a revision written since is not ours.
		err := a.Client.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s/%s: %w", kindOf(obj), namespace, obj.GetName(), err))
		}
	}
	return len(doomed), errors.Join(errs...)
}

func kindOf(obj client.Object) string {
	if _, ok := obj.(*corev1.Secret); ok {
		return "Secret"
	}
	return "ConfigMap"
}

// Live reads the live state of each of objects, placed as Apply places
// them (defaultNamespace for a namespaced object without a namespace),
// and returns those that exist. An object whose kind the cluster does not
// serve (yet: a CRD of the set defines it) does not exist. Helm hooks are
// not read.
func (a *Applier) Live(ctx context.Context, defaultNamespace string, objects []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var live []*unstructured.Unstructured
	var errs []error
	for _, o := range regularObjects(objects) {
		o = o.DeepCopy()
		if err := a.place(o, defaultNamespace); err != nil {
			gvk := o.GroupVersionKind()
			if _, merr := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); meta.IsNoMatchError(merr) {
				continue
			}
			errs = append(errs, err)
			continue
		}
		got, err := a.get(ctx, refOf(o))
		if err != nil {
			errs = append(errs, &ObjectError{Op: "read", Object: refOf(o), Err: err})
			continue
		}
		if got != nil {
			live = append(live, got)
		}
	}
	return live, errors.Join(errs...)
}
