package installation_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv/olmv0"
)

var (
	subscriptionGVK = olmv0.Subscription
	csvGVK          = olmv0.ClusterServiceVersion
	installPlanGVK  = olmv0.InstallPlan
	memcachedGVK    = schema.GroupVersionKind{Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached"}
)

// An operator OLM v0 installed (a Subscription, its Succeeded CSV and
// InstallPlan, and what the CSV owns: a Deployment, a ServiceAccount, the
// CRD), adopted from an olm Catalog serving the same bundle: the refusal
// of a CSV that is not Succeeded first, then the Deployment and
// ServiceAccount keep their UIDs, lose their ownerReferences to the CSV
// and OLM's labels (no garbage collector runs here: the ownerReferences
// are what would take them with the CSV), OLM's objects are gone, the
// operator's custom resource is untouched, and the installation is Ready
// and says where it came from.
func TestAdoptOLMOperator(t *testing.T) {
	ctx := context.Background()
	ns := packageNamespace(t)
	if err := olmv0.InstallCRDs(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	memcachedCatalog(t, dir, "memcached-adopt", "0.1.0")
	olmCatalog(t, ns, dir)

	const csvName = "memcached-adopt.v0.1.0"
	csv, err := olmv0.Operator(ctx, env.Client, ns, "memcached", "memcached-adopt", "alpha", "0.1.0", "Installing", "install-x7k2p")
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "operators.coreos.com/v1alpha1", Kind: "ClusterServiceVersion", Name: csvName, UID: csv.GetUID(),
		Controller: ptr.To(false), BlockOwnerDeletion: ptr.To(false)}
	olmLabels := map[string]string{"olm.owner": csvName, "olm.owner.kind": "ClusterServiceVersion", "olm.owner.namespace": ns,
		"operators.coreos.com/memcached-adopt." + ns: ""}
	crdData, err := os.ReadFile(filepath.Join("..", "..", "engine", "bundle", "testdata", "bundles", "memcached-operator", "manifests", "cache.example.com_memcacheds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(crdData, crd); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(memcachedGVK.GroupVersion().WithKind("MemcachedList"))
		return env.Client.List(ctx, list)
	})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "memcached-operator-controller-manager",
		Labels: olmLabels, OwnerReferences: []metav1.OwnerReference{owner}}}
	if err := env.Client.Create(ctx, sa, client.FieldOwner("catalog")); err != nil {
		t.Fatal(err)
	}
	selector := map[string]string{"control-plane": "controller-manager"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "memcached-operator-controller-manager",
			Labels: olmLabels, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector, Annotations: map[string]string{"olm.targetNamespaces": "", "olm.operatorNamespace": ns}},
				Spec: corev1.PodSpec{ServiceAccountName: "memcached-operator-controller-manager",
					Containers: []corev1.Container{{Name: "manager", Image: "quay.io/example/memcached-operator:v0.2.0"}}},
			},
		},
	}
	if err := env.Client.Create(ctx, deploy, client.FieldOwner("olm")); err != nil {
		t.Fatal(err)
	}
	sample := olmv0.Object(memcachedGVK, ns, "sample", map[string]any{"size": int64(3)})
	if err := env.Client.Create(ctx, sample); err != nil {
		t.Fatal(err)
	}

	// The CSV is not Succeeded: refused, saying what to do, and nothing
	// of the operator is written.
	inst := install(t, ns, "memcached", "memcached-adopt", "0.1.0", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Channel = "alpha"
		i.Spec.Adopt = &v1alpha1.Adoption{OLM: &v1alpha1.OLMOperatorAdoption{Subscription: "memcached"}}
	})
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAdoptionRefused)
	if c := findCond(got, v1alpha1.ConditionReady); !strings.Contains(c.Message, fmt.Sprintf("ClusterServiceVersion %s/%s of Subscription %s/memcached is in phase \"Installing\"", ns, csvName, ns)) ||
		!strings.Contains(c.Message, "fix it with OLM until its CSV is Succeeded, then adopt again") {
		t.Errorf("message: %s", c.Message)
	}
	if findCond(got, v1alpha1.ConditionStalled) == nil {
		t.Errorf("a refusal is terminal (Stalled): %s", describeConditions(got))
	}
	live, err := get(t, deploymentGVK, ns, deploy.Name)
	if err != nil || live.GetResourceVersion() != deploy.ResourceVersion {
		t.Errorf("the Deployment was written although the adoption was refused (err=%v)", err)
	}

	// OLM finishes; the installation is asked again.
	csv, err = get(t, csvGVK, ns, csvName)
	if err != nil {
		t.Fatal(err)
	}
	csv.Object["status"] = map[string]any{"phase": "Succeeded", "reason": "InstallSucceeded", "message": "install strategy completed with no errors"}
	if err := env.Client.Status().Update(ctx, csv, client.FieldOwner("olm")); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(got.DeepCopy())
	got.SetAnnotations(map[string]string{"example.com/retry": "1"})
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
			return err
		}
		if got.Status.AdoptedFrom == nil || !got.Status.AdoptedFrom.StorageRemoved {
			return fmt.Errorf("status.adoptedFrom: %+v", got.Status.AdoptedFrom)
		}
		return nil
	})
	want := v1alpha1.AdoptedFrom{Kind: "Subscription", Name: "memcached", Namespace: ns, Chart: "memcached-adopt", Version: "0.1.0",
		ClusterServiceVersion: csvName, StorageRemoved: true}
	if a := *got.Status.AdoptedFrom; a.At.IsZero() {
		t.Errorf("status.adoptedFrom.at is not set")
	} else if a.At = (metav1.Time{}); a != want {
		t.Errorf("status.adoptedFrom: %+v, want %+v", a, want)
	}
	if got.Status.InstalledVersion != "0.1.0" || len(got.Status.History) != 1 {
		t.Errorf("installed %q, history %+v", got.Status.InstalledVersion, got.Status.History)
	}

	for _, o := range []struct {
		gvk  schema.GroupVersionKind
		name string
		uid  string
	}{
		{deploymentGVK, deploy.Name, string(deploy.UID)},
		{schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, sa.Name, string(sa.UID)},
	} {
		live, err := get(t, o.gvk, ns, o.name)
		if err != nil {
			t.Fatalf("%s %s: %v", o.gvk.Kind, o.name, err)
		}
		if string(live.GetUID()) != o.uid {
			t.Errorf("%s %s: UID %s, was %s: it was recreated", o.gvk.Kind, o.name, live.GetUID(), o.uid)
		}
		if refs := live.GetOwnerReferences(); len(refs) != 0 {
			t.Errorf("%s %s still has ownerReferences %+v: OLM's garbage collection would delete it with the CSV", o.gvk.Kind, o.name, refs)
		}
		for k := range live.GetLabels() {
			if strings.HasPrefix(k, "olm.owner") {
				t.Errorf("%s %s keeps OLM's label %s", o.gvk.Kind, o.name, k)
			}
		}
		if live.GetLabels()[v1alpha1.LabelInstallationName] != "memcached" {
			t.Errorf("%s %s: labels %v", o.gvk.Kind, o.name, live.GetLabels())
		}
		for _, e := range live.GetManagedFields() {
			if e.Manager == "olm" || e.Manager == "catalog" {
				t.Errorf("%s %s: %s still manages fields", o.gvk.Kind, o.name, e.Manager)
			}
		}
	}
	if d, _ := get(t, deploymentGVK, ns, deploy.Name); d != nil {
		if a, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", "olm.targetNamespaces"); a != "" {
			t.Errorf("olm.targetNamespaces %q, want all namespaces", a)
		}
	}
	for _, o := range []struct {
		gvk  schema.GroupVersionKind
		name string
	}{{subscriptionGVK, "memcached"}, {installPlanGVK, "install-x7k2p"}, {csvGVK, csvName}} {
		if _, err := get(t, o.gvk, ns, o.name); !apierrors.IsNotFound(err) {
			t.Errorf("OLM's %s %s is still there (err=%v)", o.gvk.Kind, o.name, err)
		}
	}
	cr, err := get(t, memcachedGVK, ns, "sample")
	if err != nil || cr.GetResourceVersion() != sample.GetResourceVersion() {
		t.Errorf("the operator's custom resource was written or deleted (err=%v)", err)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready: %s", describeConditions(got))
	}

	update(t, ns, "memcached", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Uninstall.DeleteCRDs = true })
	if err := env.Client.Delete(ctx, sample); err != nil {
		t.Fatal(err)
	}
	deleteAndWait(t, got)
}
