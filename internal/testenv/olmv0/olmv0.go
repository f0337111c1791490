// Package olmv0 gives tests what OLM v0 would leave on a cluster: the
// CRDs of its Subscription, ClusterServiceVersion and InstallPlan (their
// group, version, kind and status subresource; schemas that keep any
// field) and objects of those kinds as OLM writes them. No OLM runs: the
// tests write what it would have.
package olmv0

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OLM v0's kinds, as operators.coreos.com/v1alpha1 serves them.
var (
	Subscription          = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "Subscription"}
	ClusterServiceVersion = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "ClusterServiceVersion"}
	InstallPlan           = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "InstallPlan"}
)

// InstallCRDs creates the CRDs of Subscription, ClusterServiceVersion and
// InstallPlan unless they exist, and waits until the three are served.
func InstallCRDs(ctx context.Context, c client.Client) error {
	kinds := []schema.GroupVersionKind{Subscription, ClusterServiceVersion, InstallPlan}
	for _, gvk := range kinds {
		kind := strings.ToLower(gvk.Kind)
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: kind + "s." + gvk.Group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: gvk.Group, Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: gvk.Kind, ListKind: gvk.Kind + "List", Plural: kind + "s", Singular: kind},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: gvk.Version, Served: true, Storage: true,
					Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptr.To(true),
					}},
				}},
			},
		}
		if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, gvk := range kinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		for {
			err := c.List(ctx, list)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s is not served: %w", gvk.Kind, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// Object is an object of kind gvk with spec.
func Object(gvk schema.GroupVersionKind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// Create creates obj under field manager manager ("olm" or "catalog",
// as OLM's two binaries write), then, when status is not nil, its status.
func Create(ctx context.Context, c client.Client, manager string, obj *unstructured.Unstructured, status map[string]any) error {
	if err := c.Create(ctx, obj, client.FieldOwner(manager)); err != nil {
		return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	if status == nil {
		return nil
	}
	obj.Object["status"] = status
	if err := c.Status().Update(ctx, obj, client.FieldOwner(manager)); err != nil {
		return fmt.Errorf("writing the status of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// Operator creates what OLM leaves for an installed operator of package
// pkg at version in namespace ns: Subscription sub on channel, the CSV
// "<pkg>.v<version>" in phase, and InstallPlan plan that installed it.
// It returns the CSV.
func Operator(ctx context.Context, c client.Client, ns, sub, pkg, channel, version, phase, plan string) (*unstructured.Unstructured, error) {
	csvName := pkg + ".v" + version
	csv := Object(ClusterServiceVersion, ns, csvName, map[string]any{"version": version, "displayName": pkg})
	status := map[string]any{"phase": phase, "reason": "InstallSucceeded", "message": "install strategy completed with no errors"}
	if phase != "Succeeded" {
		status = map[string]any{"phase": phase, "reason": "InstallWaiting", "message": "installing: waiting for deployment to become ready"}
	}
	if err := Create(ctx, c, "catalog", csv, status); err != nil {
		return nil, err
	}
	if err := Create(ctx, c, "catalog", Object(InstallPlan, ns, plan, map[string]any{
		"clusterServiceVersionNames": []any{csvName}, "approval": "Automatic", "approved": true,
	}), map[string]any{"phase": "Complete"}); err != nil {
		return nil, err
	}
	if err := Create(ctx, c, "catalog", Object(Subscription, ns, sub, map[string]any{
		"name": pkg, "channel": channel, "source": "operatorhubio-catalog", "sourceNamespace": "olm",
	}), map[string]any{"installedCSV": csvName, "currentCSV": csvName, "installPlanRef": map[string]any{"name": plan, "namespace": ns}}); err != nil {
		return nil, err
	}
	return csv, nil
}
