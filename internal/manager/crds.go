package manager

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/config/admission"
	"github.com/annex-platform/annex/config/crd"
	"github.com/annex-platform/annex/internal/scheme"
)

// InstallCRDs applies the Annex CRDs (server-side apply, field manager
// "annex"), waits until every one is Established, then installs the
// admission policies of the approval gate (config/admission) and waits
// until they are enforced — each wait at most timeout.
func InstallCRDs(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	crds, err := crd.All()
	if err != nil {
		return err
	}
	for _, obj := range crds {
		obj.TypeMeta.APIVersion = apiextensionsv1.SchemeGroupVersion.String()
		obj.TypeMeta.Kind = "CustomResourceDefinition"
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: content}
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("annex"), client.ForceOwnership); err != nil {
			return fmt.Errorf("installing CRD %s: %w", obj.Name, err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, obj := range crds {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				return false, nil
			}
			if !established(got) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return admission.Install(ctx, c, timeout)
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
