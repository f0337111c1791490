package crdmigrate_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/crdmigrate"
	"github.com/annex-platform/annex/internal/testenv"
)

const group = "migrate.test.annex.dev"

func version(name string, served, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
	return apiextensionsv1.CustomResourceDefinitionVersion{
		Name: name, Served: served, Storage: storage,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
			},
		}},
	}
}

func thing(ns, name, apiVersion string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/" + apiVersion, "kind": "Thing",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"size": int64(1)},
	}}
}

// Migrate on a real API server: objects stored at v1 are written back at
// v2 (their resourceVersion moves), an object already stored at v2 is
// not stored again, every page is read, status.storedVersions is trimmed
// to v2, a second run finds nothing to do, and the API server then
// accepts the CRD without v1, which it refused before.
func TestMigrate(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	// The client every Annex applier uses: a REST mapper that learns new
	// kinds and versions on a miss.
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    group,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "Thing", ListKind: "ThingList", Plural: "things", Singular: "thing"},
			Scope:    apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", true, true)},
		},
	}
	if err := c.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "things"}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error { return c.Create(ctx, thing("things", "old-0", "v1")) })
	for i := 1; i < 7; i++ {
		if err := c.Create(ctx, thing("things", fmt.Sprintf("old-%d", i), "v1")); err != nil {
			t.Fatal(err)
		}
	}

	// Nothing to migrate yet: storedVersions is [v1], the storage version.
	if res, err := crdmigrate.Migrate(ctx, c, crd.Name, 3); err != nil || res.Objects != 0 || len(res.Trimmed) != 0 {
		t.Fatalf("before the storage version moved: %+v, %v", res, err)
	}

	// v2 becomes the storage version; v1 stays, no longer served.
	if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
		t.Fatal(err)
	}
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", false, false), version("v2", true, true)}
	if err := c.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		return c.Create(ctx, thing("things", "fresh", "v2"))
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(crd.Status.StoredVersions, []string{"v1", "v2"}) {
		t.Fatalf("storedVersions %v, want [v1 v2]", crd.Status.StoredVersions)
	}
	before := resourceVersions(t, c)

	res, err := crdmigrate.Migrate(ctx, c, crd.Name, 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.StorageVersion != "v2" || res.Objects != 8 || !slices.Equal(res.Trimmed, []string{"v1"}) {
		t.Fatalf("Migrate = %+v, want 8 objects at v2, v1 trimmed", res)
	}
	after := resourceVersions(t, c)
	for name, rv := range before {
		rewritten := after[name] != rv
		if want := name != "fresh"; rewritten != want {
			t.Errorf("%s: resourceVersion %s → %s; rewritten %v, want %v", name, rv, after[name], rewritten, want)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(crd.Status.StoredVersions, []string{"v2"}) {
		t.Fatalf("storedVersions %v after Migrate, want [v2]", crd.Status.StoredVersions)
	}

	// Nothing left: a second run writes nothing.
	if res, err := crdmigrate.Migrate(ctx, c, crd.Name, 3); err != nil || res.Objects != 0 || len(res.Trimmed) != 0 {
		t.Fatalf("second run: %+v, %v", res, err)
	}
	// v1 can go now.
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{version("v2", true, true)}
	if err := c.Update(ctx, crd); err != nil {
		t.Fatalf("dropping v1 after the migration: %v", err)
	}
	// A CRD that does not exist is nothing to do.
	if res, err := crdmigrate.Migrate(ctx, c, "absent."+group, 0); err != nil || res.StorageVersion != "" {
		t.Fatalf("absent CRD: %+v, %v", res, err)
	}
}

// resourceVersions are the Things' resourceVersions by name.
func resourceVersions(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v2", Kind: "ThingList"})
	if err := c.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, item := range list.Items {
		out[item.GetName()] = item.GetResourceVersion()
	}
	return out
}
