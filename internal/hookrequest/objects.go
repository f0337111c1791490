package hookrequest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
)

// writeObjects stores the change's objects in a Secret owned by the
// request, named after it, and returns where they are.
func (k *Asker) writeObjects(ctx context.Context, req *v1alpha1.HookRequest, objs []*unstructured.Unstructured) (v1alpha1.SecretKeyReference, error) {
	key, data, err := encodeObjects(objs)
	if err != nil {
		return v1alpha1.SecretKeyReference{}, fmt.Errorf("storing the objects for the hooks: %w", err)
	}
	ref := v1alpha1.SecretKeyReference{Namespace: req.Namespace, Name: req.Name, Key: key}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name, Labels: map[string]string{
			v1alpha1.LabelInstallationName: names.LabelValue(req.Spec.Installation), v1alpha1.LabelInstallationNamespace: req.Namespace,
		}},
		Type: v1alpha1.HookObjectsSecretType,
		Data: map[string][]byte{key: data},
	}
	if err := controllerutil.SetControllerReference(req, sec, k.Client.Scheme()); err != nil {
		return ref, err
	}
	err = k.Client.Create(ctx, sec)
	if !apierrors.IsAlreadyExists(err) {
		return ref, err
	}
	// Made for a deleted request of the same change (the same objects):
	// taken over, so that collecting that request does not take it.
	existing := &corev1.Secret{}
	if err := k.Reader.Get(ctx, client.ObjectKeyFromObject(sec), existing); err != nil {
		return ref, err
	}
	if metav1.IsControlledBy(existing, req) {
		return ref, nil
	}
	existing.OwnerReferences = sec.OwnerReferences
	existing.Data = sec.Data
	return ref, k.Client.Update(ctx, existing)
}

// maxPlainObjects is the size above which a hook's objects are stored
// gzip-compressed; maxSecretData what one Secret holds.
const (
	maxPlainObjects = 512 << 10
	maxSecretData   = 1000 << 10
)

// encodeObjects returns objs as a YAML stream, and the Secret key it is
// stored under: objects.yaml, or objects.yaml.gz when compressed. A set
// too large for one Secret even compressed is an error.
func encodeObjects(objs []*unstructured.Unstructured) (key string, data []byte, err error) {
	var buf bytes.Buffer
	for _, o := range objs {
		doc, err := yaml.Marshal(o.Object)
		if err != nil {
			return "", nil, err
		}
		buf.WriteString("---\n")
		buf.Write(doc)
	}
	if buf.Len() <= maxPlainObjects {
		return "objects.yaml", buf.Bytes(), nil
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return "", nil, err
	}
	if err := w.Close(); err != nil {
		return "", nil, err
	}
	if gz.Len() > maxSecretData {
		return "", nil, fmt.Errorf("the %d objects take %d bytes compressed, more than one Secret holds", len(objs), gz.Len())
	}
	return "objects.yaml.gz", gz.Bytes(), nil
}
