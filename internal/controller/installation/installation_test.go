package installation_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/manager"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
	"github.com/annex-platform/annex/internal/testenv/withmanager"
)

// env is one real kube-apiserver + etcd with the Annex manager running
// against it, shared by the tests of this package; each test works in its
// own namespace.
var env *testenv.Env

// certificateClockAhead is how far ahead of the wall clock the manager
// issues and renews webhook certificates (TestBundleWebhooks moves it).
var certificateClockAhead atomic.Int64

// The hooks' tests answer within a few hundred milliseconds, but share
// two cores with other test packages: the reconcile that asks a hook
// waits long enough for the answer to arrive on a loaded machine.
func TestMain(m *testing.M) {
	withmanager.MainWith(m, &env, func(o *manager.Options) {
		o.HookAnswerWait = 20 * time.Second
		o.CertificateClock = func() time.Time { return time.Now().Add(time.Duration(certificateClockAhead.Load())) }
	})
}

// podinfoChart is a small web app: ServiceAccount, Service, ConfigMap and a
// Deployment scaled to 0 (healthy without controllers), with a values schema.
// Extensions are cluster-scoped and shared by the tests of this package, so
// each test names its chart after itself.
func podinfoChart(name, version string, extraFiles map[string]string) helmrepo.Chart {
	files := map[string]string{
		"values.yaml": "replicas: 0\nmessage: hello\n",
		"values.schema.json": `{"type":"object","properties":{
			"replicas":{"type":"integer","minimum":0},
			"message":{"type":"string","minLength":1}},"required":["message"]}`,
		"templates/sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {{ .Release.Name }}\n",
		"templates/svc.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80, targetPort: 8080}]
`,
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  message: {{ .Values.message | quote }}
  version: {{ .Chart.Version | quote }}
`,
		"templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      serviceAccountName: {{ .Release.Name }}
      containers: [{name: web, image: "ghcr.io/stefanprodan/podinfo:6.5.0"}]
`,
	}
	for k, v := range extraFiles {
		if v == "" {
			delete(files, k)
			continue
		}
		files[k] = v
	}
	return helmrepo.Chart{Name: name, Version: version, AppVersion: version, Files: files}
}

// widgetChart brings a CRD and a custom resource of it in the same chart.
func widgetChart(name string) helmrepo.Chart {
	return helmrepo.Chart{Name: name, Version: "1.0.0", Files: map[string]string{
		"crds/widget.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.annex.dev
spec:
  group: example.annex.dev
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
`,
		"templates/widget.yaml": "apiVersion: example.annex.dev/v1\nkind: Widget\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  size: 3\n",
	}}
}

// setup creates a namespace, a Helm repository with charts and a Catalog of
// it, and waits until the catalog's Extensions exist.
func setup(t *testing.T, charts ...helmrepo.Chart) (ns string, repo *helmrepo.Server) {
	t.Helper()
	ctx := context.Background()
	ns = strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-"))
	ns = strings.ReplaceAll(ns, "/", "-")
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	repo = helmrepo.NewServer(t, charts...)
	cat := &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}},
	}
	if err := env.Client.Create(ctx, cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cat) })
	eventually(t, 30*time.Second, func() error {
		got := &v1alpha1.Catalog{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cat), got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("catalog not ready: %+v", got.Status.Conditions)
		}
		return nil
	})
	return ns, repo
}

func install(t *testing.T, ns, name, extension, version string, mutate ...func(*v1alpha1.ExtensionInstallation)) *v1alpha1.ExtensionInstallation {
	t.Helper()
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: extension, Version: version},
	}
	for _, m := range mutate {
		m(inst)
	}
	if err := env.Client.Create(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	return inst
}

// waitCondition waits until the installation's condition has the status
// (and reason, if given) for its current generation, and returns it.
func waitCondition(t *testing.T, inst *v1alpha1.ExtensionInstallation, condType string, status metav1.ConditionStatus, reason string) *v1alpha1.ExtensionInstallation {
	t.Helper()
	got := &v1alpha1.ExtensionInstallation{}
	eventually(t, 60*time.Second, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(inst), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, condType)
		if c == nil || c.Status != status || c.ObservedGeneration != got.Generation || (reason != "" && c.Reason != reason) {
			return fmt.Errorf("%s: want %s=%s (%s), conditions: %s", inst.Name, condType, status, reason, describeConditions(got))
		}
		return nil
	})
	return got
}

func describeConditions(inst *v1alpha1.ExtensionInstallation) string {
	var parts []string
	for _, c := range inst.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s/%s(gen %d): %s", c.Type, c.Status, c.Reason, c.ObservedGeneration, c.Message))
	}
	return strings.Join(parts, "; ")
}

// eventually polls f until it returns nil, failing the test with its last
// error after timeout.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func get(t *testing.T, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	return u, err
}

var (
	configMapGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	serviceGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	widgetGVK     = schema.GroupVersionKind{Group: "example.annex.dev", Version: "v1", Kind: "Widget"}
)

func TestInstallUpgradePruneUninstall(t *testing.T) {
	ctx := context.Background()
	// 2.0.0 drops the Service and adds a second ConfigMap.
	v2 := podinfoChart("app1", "2.0.0", map[string]string{
		"templates/svc.yaml":   "",
		"templates/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\ndata: {a: b}\n",
	})
	ns, _ := setup(t, podinfoChart("app1", "1.0.0", nil), v2)

	inst := install(t, ns, "web", "app1", "1.x")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if got.Status.InstalledVersion != "1.0.0" || got.Status.ResolvedVersion != "1.0.0" {
		t.Fatalf("installed %q resolved %q, want 1.0.0", got.Status.InstalledVersion, got.Status.ResolvedVersion)
	}
	if len(got.Status.Inventory) != 4 || got.Status.InventoryCount != 4 {
		t.Fatalf("inventory: %+v", got.Status.Inventory)
	}
	// The chart's apply ran through the plan executor: one plan, its
	// phases as steps.
	if p := got.Status.Plans; len(p) != 1 || p[0].Name != "install" || p[0].State != v1alpha1.PlanComplete ||
		p[0].Revision != 1 || len(p[0].Phases) != 1 || stepNames(p[0]) != "ServiceAccounts and RBAC,objects" {
		t.Fatalf("chart plan: %+v", p)
	}
	cm, err := get(t, configMapGVK, ns, "web-config")
	if err != nil {
		t.Fatal(err)
	}
	if cm.GetLabels()[v1alpha1.LabelInstallationName] != "web" || cm.GetLabels()[v1alpha1.LabelInstallationNamespace] != ns {
		t.Fatalf("labels: %v", cm.GetLabels())
	}
	if _, err := get(t, serviceGVK, ns, "web"); err != nil {
		t.Fatal(err)
	}

	// Upgrade: 2.0.0 is applied in place; the Service, which left the set, is pruned.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Version = "2.x"
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if got.Status.InstalledVersion != "2.0.0" || len(got.Status.History) != 2 || got.Status.History[0].Number != 2 {
		t.Fatalf("after upgrade: version %q history %+v", got.Status.InstalledVersion, got.Status.History)
	}
	if _, err := get(t, serviceGVK, ns, "web"); !apierrors.IsNotFound(err) {
		t.Fatalf("Service should be pruned, got err=%v", err)
	}
	if _, err := get(t, configMapGVK, ns, "web-extra"); err != nil {
		t.Fatal(err)
	}
	cm, _ = get(t, configMapGVK, ns, "web-config")
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "version"); v != "2.0.0" {
		t.Fatalf("config version %q, want 2.0.0", v)
	}
	assertNoWarnings(t, got)

	// Uninstall removes exactly the inventory, then the object goes.
	inventory := got.Status.Inventory
	if err := env.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(got), &v1alpha1.ExtensionInstallation{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("installation still present (err=%v)", err)
		}
		return nil
	})
	for _, ref := range inventory {
		gvk := schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind}
		if _, err := get(t, gvk, ref.Namespace, ref.Name); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s/%s still exists after uninstall (err=%v)", ref.Kind, ref.Namespace, ref.Name, err)
		}
	}
}

func TestValuesFromSecret(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, podinfoChart("app2", "1.0.0", nil))
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-values"},
		StringData: map[string]string{"values.yaml": "message: from-secret\n", "token": "s3cret\n"},
	}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	inst := install(t, ns, "web", "app2", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"message":"from-spec","replicas":0}`)}
		i.Spec.ValuesFrom = []v1alpha1.ValuesReference{
			{Kind: "Secret", Name: "web-values"},
			{Kind: "Secret", Name: "web-values", Key: "token", TargetPath: "auth.token"},
			{Kind: "ConfigMap", Name: "absent", Optional: true},
		}
	})
	waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	cm, err := get(t, configMapGVK, ns, "web-config")
	if err != nil {
		t.Fatal(err)
	}
	if msg, _, _ := unstructured.NestedString(cm.Object, "data", "message"); msg != "from-secret" {
		t.Fatalf("message %q, want the Secret's value over spec.values", msg)
	}
}

func TestMissingValuesSecretWaits(t *testing.T) {
	ns, _ := setup(t, podinfoChart("app3", "1.0.0", nil))
	inst := install(t, ns, "web", "app3", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "Secret", Name: "later"}}
	})
	got := &v1alpha1.ExtensionInstallation{}
	eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(inst), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != v1alpha1.ReasonValuesSourceMissing {
			return fmt.Errorf("conditions: %s", describeConditions(got))
		}
		want := fmt.Sprintf(`spec.valuesFrom[0]: Secret %s/later has no key "values.yaml"; create it, or mark the reference optional`, ns)
		if c.Message != want {
			return fmt.Errorf("message %q, want %q", c.Message, want)
		}
		return nil
	})
}

func TestInvalidValuesRefusedBeforeApply(t *testing.T) {
	ns, _ := setup(t, podinfoChart("app4", "1.0.0", nil))
	inst := install(t, ns, "web", "app4", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":-1}`)}
	})
	got := waitCondition(t, inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonValuesInvalid)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	if ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, "values.replicas") || !strings.Contains(ready.Message, `app4 1.0.0`) {
		t.Fatalf("Ready: %+v", ready)
	}
	if got.Status.ObservedGeneration != got.Generation {
		t.Fatalf("a terminal error must move observedGeneration")
	}
	// Nothing was applied.
	var cms corev1.ConfigMapList
	if err := env.Client.List(context.Background(), &cms, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelInstallationName: "web"}); err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 0 || len(got.Status.Inventory) != 0 {
		t.Fatalf("objects were applied: %d configmaps, inventory %v", len(cms.Items), got.Status.Inventory)
	}

	// Fixing the values lets it install.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":0}`)}
	if err := env.Client.Patch(context.Background(), got, patch); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
}

func TestCRDAndCustomResourceInOneChart(t *testing.T) {
	ns, _ := setup(t, widgetChart("widgets"))
	inst := install(t, ns, "w", "widgets", "")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if len(got.Status.History) != 1 {
		t.Fatalf("history %+v, want one revision", got.Status.History)
	}
	if _, err := get(t, widgetGVK, ns, "w"); err != nil {
		t.Fatal(err)
	}
	assertNoWarnings(t, got)

	// Uninstall keeps the CRD (spec.uninstall.deleteCRDs is false).
	if err := env.Client.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		if _, err := get(t, widgetGVK, ns, "w"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("widget still there: %v", err)
		}
		return nil
	})
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "widgets.example.annex.dev"}, crd); err != nil {
		t.Fatalf("CRD must stay: %v", err)
	}
}

func TestTerminalConditions(t *testing.T) {
	ns, _ := setup(t, podinfoChart("app5", "1.0.0", nil))
	tests := []struct {
		name, extension, version, reason, message string
	}{
		// An extension no catalog offers: names the field, the object and the fix.
		{"unknown", "nginx-nope", "", v1alpha1.ReasonExtensionNotFound,
			"no catalog offers an extension named \"nginx-nope\" (spec.extension of testterminalconditions/unknown); " +
				"check the name with `kubectl get extensions`, or add a Catalog that offers nginx-nope."},
		// A range nothing satisfies lists what exists.
		{"norange", "app5", ">=5", v1alpha1.ReasonNoMatchingVersion,
			"testterminalconditions/norange wants app5 >=5, but no catalog offers a version in that range (available: 1.0.0). " +
				"Change spec.version of testterminalconditions/norange."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := install(t, ns, tt.name, tt.extension, tt.version)
			got := waitCondition(t, inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, tt.reason)
			resolved := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionResolved)
			if resolved == nil || resolved.Status != metav1.ConditionFalse || resolved.Message != tt.message {
				t.Fatalf("Resolved: %+v\nwant message: %s", resolved, tt.message)
			}
		})
	}
}

func TestOwnershipConflictIsTerminal(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, podinfoChart("app6", "1.0.0", nil))
	// Someone else manages web-config's message field.
	cm := &unstructured.Unstructured{}
	cm.SetGroupVersionKind(configMapGVK)
	cm.SetNamespace(ns)
	cm.SetName("web-config")
	_ = unstructured.SetNestedField(cm.Object, "theirs", "data", "message")
	if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(cm), client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}
	inst := install(t, ns, "web", "app6", "")
	got := waitCondition(t, inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonOwnershipConflict)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	if !strings.Contains(ready.Message, "web-config") || !strings.Contains(ready.Message, "kubectl") ||
		!strings.Contains(ready.Message, "spec.takeOwnership: true") {
		t.Fatalf("message must name the object, the other manager and the fix: %s", ready.Message)
	}
}

func TestCatalogResyncUnchangedWritesNothing(t *testing.T) {
	ctx := context.Background()
	ns, repo := setup(t, podinfoChart("app7", "1.0.0", nil))
	cat := &v1alpha1.Catalog{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, cat); err != nil {
		t.Fatal(err)
	}
	ext := &v1alpha1.Extension{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "app7"}, ext); err != nil {
		t.Fatal(err)
	}
	// Sync every second for a while.
	patch := client.MergeFrom(cat.DeepCopy())
	cat.Spec.Interval = metav1.Duration{Duration: time.Second}
	if err := env.Client.Patch(ctx, cat, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, cat); err != nil {
			return err
		}
		if cat.Status.ObservedGeneration != cat.Generation {
			return fmt.Errorf("catalog not synced yet")
		}
		return nil
	})
	rv, requests := cat.ResourceVersion, repo.Requests("/index.yaml")
	eventually(t, 30*time.Second, func() error {
		if n := repo.Requests("/index.yaml"); n < requests+3 {
			return fmt.Errorf("only %d re-syncs so far", n-requests)
		}
		return nil
	})
	after := &v1alpha1.Catalog{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, after); err != nil {
		t.Fatal(err)
	}
	extAfter := &v1alpha1.Extension{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "app7"}, extAfter); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != rv || extAfter.ResourceVersion != ext.ResourceVersion {
		t.Fatalf("an unchanged index was written: catalog %s→%s, extension %s→%s", rv, after.ResourceVersion, ext.ResourceVersion, extAfter.ResourceVersion)
	}

	// A new version is picked up and written.
	repo.Add(t, podinfoChart("app7", "1.1.0", nil))
	eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "app7"}, extAfter); err != nil {
			return err
		}
		if extAfter.Spec.Versions[0].Version != "1.1.0" {
			return fmt.Errorf("latest is %s", extAfter.Spec.Versions[0].Version)
		}
		return nil
	})
}

// assertNoWarnings fails if any Warning event was recorded for inst.
func assertNoWarnings(t *testing.T, inst *v1alpha1.ExtensionInstallation) {
	t.Helper()
	var evs eventsv1.EventList
	if err := env.Client.List(context.Background(), &evs, client.InNamespace(inst.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Regarding.Name == inst.Name && e.Type == corev1.EventTypeWarning {
			t.Errorf("warning event %s: %s", e.Reason, e.Note)
		}
	}
}

func TestMissingTargetNamespaceIsCreatedAndRecorded(t *testing.T) {
	ns, _ := setup(t, podinfoChart("app8", "1.0.0", nil))
	target := ns + "-target"
	inst := install(t, ns, "web", "app8", "", func(i *v1alpha1.ExtensionInstallation) { i.Spec.TargetNamespace = target })
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if _, err := get(t, configMapGVK, target, "web-config"); err != nil {
		t.Fatalf("objects go to spec.targetNamespace: %v", err)
	}
	created, err := get(t, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", target)
	if err != nil || created.GetLabels()[v1alpha1.LabelInstallationName] != "web" {
		t.Fatalf("the namespace Annex created must carry the installation's labels: %v %v", err, created.GetLabels())
	}
	found := false
	for _, ref := range got.Status.Inventory {
		found = found || (ref.Kind == "Namespace" && ref.Name == target)
	}
	if !found {
		t.Fatalf("the created namespace must be in the inventory, to be removed with the rest: %v", got.Status.Inventory)
	}
	// Uninstalling is not exercised here: no namespace controller runs in
	// the test API server, so a deleted Namespace never finishes.
}

func stepNames(p v1alpha1.PlanStatus) string {
	var names []string
	for _, ph := range p.Phases {
		for _, st := range ph.Steps {
			names = append(names, st.Name)
		}
	}
	return strings.Join(names, ",")
}
