package installation_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/record"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// adoptChart has a Deployment (scaled to 0: healthy without
// controllers), a Service, a ConfigMap, a CRD in crds/ and a
// post-install hook. Every version writes its version into the
// ConfigMap; only 1.0.0 annotates the Service (a later version drops the
// annotation).
func adoptChart(name, version string) helmrepo.Chart {
	return helmrepo.Chart{Name: name, Version: version, AppVersion: version, Files: map[string]string{
		"values.yaml": "replicas: 0\nmessage: hello\n",
		"crds/gadget.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.` + name + `.annex.dev
spec:
  group: ` + name + `.annex.dev
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
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
		"templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {app: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers: [{name: web, image: "ghcr.io/stefanprodan/podinfo:6.5.0", ports: [{name: http, containerPort: 9898}]}]
`,
		"templates/svc.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
  {{- if eq .Chart.Version "1.0.0" }}
  annotations: {example.com/until: "1.1.0"}
  {{- end }}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{name: http, port: 80, targetPort: http}]
`,
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  message: {{ .Values.message | quote }}
  version: {{ .Chart.Version | quote }}
`,
		"templates/hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-installed
  annotations: {helm.sh/hook: post-install, helm.sh/hook-delete-policy: before-hook-creation}
data: {at: install}
`,
	}}
}

// helmInstall installs chart c as release name in ns with the Helm v4
// SDK, as `helm install` does (server-side apply, field manager "helm",
// Secret storage), and returns its configuration.
func helmInstall(t *testing.T, ns, name string, c helmrepo.Chart, values map[string]any) *action.Configuration {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	cfg, err := helmrepo.Install(context.Background(), kubeconfig, "secret", ns, ns, name, "helm", c, values)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// releaseObjects are the objects of release web of adoptChart chart in
// ns.
func releaseObjects(ns, chart string) map[string]client.ObjectKey {
	return map[string]client.ObjectKey{
		"Deployment":               {Namespace: ns, Name: "web"},
		"Service":                  {Namespace: ns, Name: "web"},
		"ConfigMap":                {Namespace: ns, Name: "web-config"},
		"CustomResourceDefinition": {Name: "gadgets." + chart + ".annex.dev"},
	}
}

var releaseGVKs = map[string]schema.GroupVersionKind{
	"Deployment":               deploymentGVK,
	"Service":                  serviceGVK,
	"ConfigMap":                configMapGVK,
	"CustomResourceDefinition": {Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
}

// liveObjects reads the release's objects.
func liveObjects(t *testing.T, ns, chart string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for kind, key := range releaseObjects(ns, chart) {
		u, err := get(t, releaseGVKs[kind], key.Namespace, key.Name)
		if err != nil {
			t.Fatalf("%s %s: %v", kind, key, err)
		}
		out[kind] = u
	}
	return out
}

// countWrites watches the release's objects and counts, per kind, the
// writes the API server reports (MODIFIED events) until stop is called.
func countWrites(t *testing.T, ns, chart string) (stop func() map[string]int) {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for kind, key := range releaseObjects(ns, chart) {
		list := &unstructured.UnstructuredList{}
		gvk := releaseGVKs[kind]
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := []client.ListOption{client.MatchingFields{"metadata.name": key.Name}}
		if key.Namespace != "" {
			opts = append(opts, client.InNamespace(key.Namespace))
		}
		w, err := wc.Watch(ctx, list, opts...)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					if ev.Type == watch.Modified {
						mu.Lock()
						counts[kind]++
						mu.Unlock()
					}
				}
			}
		})
	}
	return func() map[string]int {
		time.Sleep(time.Second) // let the last events arrive
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return counts
	}
}

func adoptInstallation(values string) func(*v1alpha1.ExtensionInstallation) {
	return func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(values)}
		i.Spec.Adopt = &v1alpha1.Adoption{Helm: &v1alpha1.HelmReleaseAdoption{Release: i.Name}}
	}
}

// waitAdopted waits until the installation is Ready and the release's
// storage is deleted.
func waitAdopted(t *testing.T, inst *v1alpha1.ExtensionInstallation) *v1alpha1.ExtensionInstallation {
	t.Helper()
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(inst), got); err != nil {
			return err
		}
		if got.Status.AdoptedFrom == nil || !got.Status.AdoptedFrom.StorageRemoved {
			return fmt.Errorf("status.adoptedFrom: %+v", got.Status.AdoptedFrom)
		}
		return nil
	})
	return got
}

// helmManaged lists the field managers of obj named helm.
func helmManaged(obj *unstructured.Unstructured) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool { return e.Manager == "helm" })
}

// A Helm release adopted in place: every object keeps its UID, the
// Deployment keeps its generation, the unchanged objects are not written
// at all (status.adoptedObjects names them by UID), the one edited by
// hand is corrected, the hook does not run again, Helm's storage is gone
// and its manifest is in revision 1's record. Then a drift correction and
// an upgrade claim what they change — Helm's fields handed to Annex, so
// that a field the upgrade drops is removed — and leave the rest
// unwritten; the uninstall removes everything but the CRD.
func TestAdoptHelmReleaseInPlace(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, adoptChart("adoptee", "1.0.0"), adoptChart("adoptee", "1.1.0"))
	cfg := helmInstall(t, ns, "web", adoptChart("adoptee", "1.0.0"), map[string]any{"message": "hi"})
	// The hook ran at helm install; were it run again, it would be back.
	if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-installed"}}); err != nil {
		t.Fatal(err)
	}
	edit(t, configMapGVK, ns, "web-config", `{"data":{"message":"edited"}}`)
	before := liveObjects(t, ns, "adoptee")
	for kind, o := range before {
		if !helmManaged(o) {
			t.Fatalf("%s: not managed by helm: %v", kind, o.GetManagedFields())
		}
	}

	writes := countWrites(t, ns, "adoptee")
	inst := install(t, ns, "web", "adoptee", "1.0.0", adoptInstallation(`{"message":"hi"}`), everySecond)
	got := waitAdopted(t, inst)
	counted := writes()

	after := liveObjects(t, ns, "adoptee")
	for kind, o := range after {
		b := before[kind]
		if o.GetUID() != b.GetUID() {
			t.Errorf("%s: UID %s, was %s: it was recreated", kind, o.GetUID(), b.GetUID())
		}
		if o.GetGeneration() != b.GetGeneration() {
			t.Errorf("%s: generation %d, was %d", kind, o.GetGeneration(), b.GetGeneration())
		}
	}
	// The edited ConfigMap: claimed (labels, Helm's fields handed over),
	// then applied; the others: not written.
	if want := map[string]int{"ConfigMap": 2}; fmt.Sprint(counted) != fmt.Sprint(want) {
		t.Errorf("writes %v, want %v", counted, want)
	}
	if msg, _, _ := unstructured.NestedString(after["ConfigMap"].Object, "data", "message"); msg != "hi" {
		t.Errorf("ConfigMap message %q, want the release's hi", msg)
	}
	checkClaimed(t, "ConfigMap", after["ConfigMap"], ns)
	checkUnclaimed(t, got, after, "CustomResourceDefinition", "Deployment", "Service")
	if _, err := get(t, configMapGVK, ns, "web-installed"); !apierrors.IsNotFound(err) {
		t.Errorf("the post-install hook ran again (err=%v)", err)
	}
	want := v1alpha1.AdoptedFrom{Kind: "HelmRelease", Name: "web", Namespace: ns, Revision: 1, Chart: "adoptee", Version: "1.0.0", StorageRemoved: true}
	if a := got.Status.AdoptedFrom; a == nil || a.At.IsZero() {
		t.Fatalf("status.adoptedFrom: %+v", a)
	} else if a.At = (metav1.Time{}); *a != want {
		t.Errorf("status.adoptedFrom: %+v, want %+v", *a, want)
	}
	if len(got.Status.History) != 1 || got.Status.InstalledVersion != "1.0.0" || got.Status.InventoryCount != 4 {
		t.Errorf("history %+v, installed %q, inventory %+v", got.Status.History, got.Status.InstalledVersion, got.Status.Inventory)
	}
	var storage corev1.SecretList
	if err := env.Client.List(ctx, &storage, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": "web"}); err != nil || len(storage.Items) != 0 {
		t.Errorf("Helm's storage is still there: %d Secrets (err=%v)", len(storage.Items), err)
	}
	list := action.NewList(cfg)
	list.All = true
	if rels, err := list.Run(); err != nil || len(rels) != 0 {
		t.Errorf("helm list shows %d releases (err=%v)", len(rels), err)
	}
	rec, found, err := record.NewStore(env.Client, env.Client, got).Read(ctx, 1)
	if err != nil || !found || rec.Adopted == nil || rec.Adopted.Name != "web" || !strings.Contains(rec.Adopted.Manifest, "name: web-config") {
		t.Errorf("revision 1's record: found %v, adopted %+v (err=%v)", found, rec.Adopted, err)
	}

	// Drift (checked every second): the Deployment edited by hand is
	// claimed and corrected; the drift checks leave the others unwritten.
	writes = countWrites(t, ns, "adoptee")
	edit(t, deploymentGVK, ns, "web", `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"ghcr.io/stefanprodan/podinfo:6.6.0"}]}}}}`)
	eventually(t, 30*time.Second, func() error {
		dep, err := get(t, deploymentGVK, ns, "web")
		if err != nil {
			return err
		}
		if image := fmt.Sprint(dep.Object["spec"].(map[string]any)["template"]); !strings.Contains(image, "podinfo:6.5.0") || dep.GetLabels()[v1alpha1.LabelInstallationName] != "web" {
			return fmt.Errorf("not corrected yet: %v, labels %v", image, dep.GetLabels())
		}
		got, err = getInstallation(t, ns, "web")
		if err != nil {
			return err
		}
		if len(got.Status.AdoptedObjects) != 2 {
			return fmt.Errorf("status.adoptedObjects: %+v", got.Status.AdoptedObjects)
		}
		return nil
	})
	counted = writes()
	if counted["Service"] != 0 || counted["CustomResourceDefinition"] != 0 || counted["ConfigMap"] != 0 {
		t.Errorf("writes during the drift checks: %v, want only the Deployment's", counted)
	}
	corrected := liveObjects(t, ns, "adoptee")
	checkClaimed(t, "Deployment", corrected["Deployment"], ns)
	checkUnclaimed(t, got, corrected, "CustomResourceDefinition", "Service")

	// Upgrade through Annex: a new version and new values, applied in
	// place (Annex alone owns the fields it claims: no conflict with
	// helm). The Service, whose annotation 1.1.0 drops, is claimed and
	// loses it; the CRD, rendered alike, is not written.
	writes = countWrites(t, ns, "adoptee")
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Version = "1.1.0"
	got.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"message":"bye"}`)}
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if got.Status.InstalledVersion != "1.1.0" || len(got.Status.History) != 2 {
		t.Fatalf("after upgrade: version %q history %+v", got.Status.InstalledVersion, got.Status.History)
	}
	counted = writes()
	if counted["CustomResourceDefinition"] != 0 || counted["Deployment"] != 0 {
		t.Errorf("writes during the upgrade: %v, want none to the CRD and the Deployment", counted)
	}
	upgraded := liveObjects(t, ns, "adoptee")
	if d := upgraded["ConfigMap"].Object["data"]; fmt.Sprint(d) != "map[message:bye version:1.1.0]" {
		t.Errorf("ConfigMap after upgrade: %v", d)
	}
	if a := upgraded["Service"].GetAnnotations(); a["example.com/until"] != "" {
		t.Errorf("Service annotations after upgrade: %v; 1.1.0 drops example.com/until", a)
	}
	checkClaimed(t, "Service", upgraded["Service"], ns)
	checkUnclaimed(t, got, upgraded, "CustomResourceDefinition")
	for kind, o := range upgraded {
		if o.GetUID() != before[kind].GetUID() {
			t.Errorf("%s recreated by the upgrade", kind)
		}
	}

	// Uninstall: the release's objects go (the CRD stays, as always).
	if err := env.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "web")
	for kind, key := range releaseObjects(ns, "adoptee") {
		_, err := get(t, releaseGVKs[kind], key.Namespace, key.Name)
		if kind == "CustomResourceDefinition" {
			if err != nil {
				t.Errorf("the CRD was deleted: %v", err)
			}
			continue
		}
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s %s still exists after uninstall (err=%v)", kind, key, err)
		}
	}
}

// edit patches an object as someone editing it by hand would (field
// manager kubectl-edit).
func edit(t *testing.T, gvk schema.GroupVersionKind, ns, name, patch string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(ns)
	obj.SetName(name)
	if err := env.Client.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
}

// checkClaimed checks that obj, of kind, is Annex's as every object it
// wrote: installation web's labels, and no field left to helm.
func checkClaimed(t *testing.T, kind string, obj *unstructured.Unstructured, ns string) {
	t.Helper()
	if helmManaged(obj) {
		t.Errorf("%s: helm still manages fields: %+v", kind, obj.GetManagedFields())
	}
	if obj.GetLabels()[v1alpha1.LabelInstallationName] != "web" || obj.GetLabels()[v1alpha1.LabelInstallationNamespace] != ns {
		t.Errorf("%s: labels %v", kind, obj.GetLabels())
	}
}

// checkUnclaimed checks that the objects of kinds, among live, were left
// as Helm wrote them (no labels of Annex's, helm's fields) and that
// status.adoptedObjects names exactly them, by UID.
func checkUnclaimed(t *testing.T, inst *v1alpha1.ExtensionInstallation, live map[string]*unstructured.Unstructured, kinds ...string) {
	t.Helper()
	var want, listed []string
	for _, kind := range kinds {
		o := live[kind]
		if o.GetLabels()[v1alpha1.LabelInstallationName] != "" || !helmManaged(o) {
			t.Errorf("%s was written: labels %v, managedFields %+v", kind, o.GetLabels(), o.GetManagedFields())
		}
		want = append(want, kind+"/"+string(o.GetUID()))
	}
	for _, a := range inst.Status.AdoptedObjects {
		listed = append(listed, a.Kind+"/"+string(a.UID))
	}
	slices.Sort(want)
	slices.Sort(listed)
	if !slices.Equal(want, listed) {
		t.Errorf("status.adoptedObjects %v, want %v", listed, want)
	}
}

// An adopted release rolled back to its adopted revision, the way Annex
// rolls back: an upgrade that never becomes healthy (1.2.0 runs a
// replica, and no controller makes it Available here) is rolled back to
// the last healthy revision — revision 1, the adoption — from its
// record. The objects are as adopted, with their UIDs, and the hook is
// not run; then the installation uninstalls clean.
func TestAdoptedRevisionRollback(t *testing.T) {
	ctx := context.Background()
	broken := adoptChart("rollee", "1.2.0")
	broken.Files["values.yaml"] = "replicas: 1\nmessage: hello\n"
	ns, _ := setup(t, adoptChart("rollee", "1.0.0"), broken)
	helmInstall(t, ns, "web", adoptChart("rollee", "1.0.0"), map[string]any{"message": "hi"})
	if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-installed"}}); err != nil {
		t.Fatal(err)
	}
	inst := install(t, ns, "web", "rollee", "1.0.0", adoptInstallation(`{"message":"hi"}`), func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Timeout = metav1.Duration{Duration: 2 * time.Second}
		i.Spec.Upgrade.Retries = ptrTo(int32(0))
	})
	got := waitAdopted(t, inst)
	adopted := liveObjects(t, ns, "rollee")

	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Version = "1.2.0"
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonRolledBack)
	if c := findCond(got, v1alpha1.ConditionReady); !strings.Contains(c.Message, "upgrade to rollee 1.2.0 failed") ||
		!strings.Contains(c.Message, "rolled back to rollee 1.0.0 (revision 1,") {
		t.Errorf("Ready: %s", c.Message)
	}
	if got.Status.InstalledVersion != "1.0.0" || got.Status.History[0].Version != "1.0.0" {
		t.Errorf("installed %q, history %+v", got.Status.InstalledVersion, got.Status.History)
	}
	back := liveObjects(t, ns, "rollee")
	for kind, o := range back {
		if o.GetUID() != adopted[kind].GetUID() {
			t.Errorf("%s: UID %s, was %s: the rollback recreated it", kind, o.GetUID(), adopted[kind].GetUID())
		}
	}
	if d := back["ConfigMap"].Object["data"]; fmt.Sprint(d) != "map[message:hi version:1.0.0]" {
		t.Errorf("ConfigMap after the rollback: %v, want the adopted data", d)
	}
	if a := back["Service"].GetAnnotations(); a["example.com/until"] != "1.1.0" {
		t.Errorf("Service annotations after the rollback: %v, want 1.0.0's example.com/until back", a)
	}
	// What 1.2.0 changed was claimed by the upgrade; the CRD, which no
	// revision changed, is still as Helm left it.
	checkUnclaimed(t, got, back, "CustomResourceDefinition")
	for _, field := range [][]string{{"spec", "replicas"}, {"spec", "template"}} {
		was, _, _ := unstructured.NestedFieldNoCopy(adopted["Deployment"].Object, field...)
		now, _, _ := unstructured.NestedFieldNoCopy(back["Deployment"].Object, field...)
		if fmt.Sprint(was) != fmt.Sprint(now) {
			t.Errorf("Deployment %v after the rollback: %v, adopted %v", field, now, was)
		}
	}
	if _, err := get(t, configMapGVK, ns, "web-installed"); !apierrors.IsNotFound(err) {
		t.Errorf("the post-install hook ran in the upgrade or the rollback (err=%v)", err)
	}

	if err := env.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "web")
	for kind, key := range releaseObjects(ns, "rollee") {
		if _, err := get(t, releaseGVKs[kind], key.Namespace, key.Name); kind != "CustomResourceDefinition" && !apierrors.IsNotFound(err) {
			t.Errorf("%s %s still exists after uninstall (err=%v)", kind, key, err)
		}
	}
	var records corev1.SecretList
	if err := env.Client.List(ctx, &records, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range records.Items {
		t.Errorf("Secret %s left after uninstall", s.Name)
	}
}

// A release whose objects were edited by hand: adoption writes Annex's
// values back, and only where they differ.
func TestAdoptHelmReleaseEditedByHand(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, adoptChart("edited", "1.0.0"))
	helmInstall(t, ns, "web", adoptChart("edited", "1.0.0"), nil)
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-config"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["message"] = "edited"
	if err := env.Client.Update(ctx, cm, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	before := liveObjects(t, ns, "edited")

	writes := countWrites(t, ns, "edited")
	inst := install(t, ns, "web", "edited", "1.0.0", adoptInstallation(`{}`))
	waitAdopted(t, inst)
	counted := writes()

	after := liveObjects(t, ns, "edited")
	if msg, _, _ := unstructured.NestedString(after["ConfigMap"].Object, "data", "message"); msg != "hello" {
		t.Errorf("ConfigMap message %q, want the chart's hello", msg)
	}
	for kind, o := range after {
		if o.GetUID() != before[kind].GetUID() {
			t.Errorf("%s recreated", kind)
		}
	}
	// The edited ConfigMap: claimed (labels, Helm's fields handed over),
	// then applied; the others: not written at all.
	if want := map[string]int{"ConfigMap": 2}; fmt.Sprint(counted) != fmt.Sprint(want) {
		t.Errorf("writes %v, want %v", counted, want)
	}
	got, err := getInstallation(t, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	checkClaimed(t, "ConfigMap", after["ConfigMap"], ns)
	checkUnclaimed(t, got, after, "CustomResourceDefinition", "Deployment", "Service")
	if after["Deployment"].GetGeneration() != before["Deployment"].GetGeneration() {
		t.Errorf("Deployment generation %d, was %d", after["Deployment"].GetGeneration(), before["Deployment"].GetGeneration())
	}
}

// Refusals: a pending-upgrade release (with its fix, which works once the
// installation is asked again), and a release with an object of another
// installation. Neither writes anything to the release's objects.
func TestAdoptHelmReleaseRefused(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, adoptChart("refused", "1.0.0"))
	cfg := helmInstall(t, ns, "web", adoptChart("refused", "1.0.0"), nil)
	last, err := cfg.Releases.Last("web")
	if err != nil {
		t.Fatal(err)
	}
	pending := *last.(*rspb.Release)
	info := *pending.Info
	info.Status = common.StatusPendingUpgrade
	pending.Info, pending.Version = &info, 2
	if err := cfg.Releases.Create(&pending); err != nil {
		t.Fatal(err)
	}
	before := liveObjects(t, ns, "refused")
	// The API server refuses an installation not named after its release
	// (the chart is rendered with the installation's name).
	misnamed := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"},
		Spec: v1alpha1.ExtensionInstallationSpec{Extension: "refused", Adopt: &v1alpha1.Adoption{Helm: &v1alpha1.HelmReleaseAdoption{Release: "web"}}}}
	if err := env.Client.Create(ctx, misnamed); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.adopt.helm.release must be the installation's metadata.name") {
		t.Errorf("an installation not named after its release: %v", err)
	}
	inst := install(t, ns, "web", "refused", "1.0.0", adoptInstallation(`{}`))
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAdoptionRefused)
	c := findCond(got, v1alpha1.ConditionReady)
	if !strings.Contains(c.Message, "its latest revision 2 is pending-upgrade") ||
		!strings.Contains(c.Message, fmt.Sprintf("kubectl delete secret sh.helm.release.v1.web.v2 -n %s", ns)) {
		t.Errorf("message: %s", c.Message)
	}
	if findCond(got, v1alpha1.ConditionStalled) == nil {
		t.Errorf("a refusal is terminal (Stalled): %s", describeConditions(got))
	}
	for kind, o := range liveObjects(t, ns, "refused") {
		if o.GetResourceVersion() != before[kind].GetResourceVersion() {
			t.Errorf("%s was written although the adoption was refused", kind)
		}
	}
	// The fix, then the installation is asked again.
	if err := env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1.web.v2"}}); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(got.DeepCopy())
	got.SetAnnotations(map[string]string{"example.com/retry": "1"})
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	waitAdopted(t, inst)

	// Another release whose ConfigMap belongs to installation web.
	helmInstall(t, ns, "site", adoptChart("refused", "1.0.0"), nil)
	other := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "site-config"}, other); err != nil {
		t.Fatal(err)
	}
	other.Labels = map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue, v1alpha1.LabelInstallationName: "web", v1alpha1.LabelInstallationNamespace: ns}
	if err := env.Client.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	site := install(t, ns, "site", "refused", "1.0.0", adoptInstallation(`{}`))
	got = waitCondition(t, site, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAdoptionRefused)
	if c := findCond(got, v1alpha1.ConditionReady); !strings.Contains(c.Message, fmt.Sprintf("ConfigMap %s/site-config (installation %s/web)", ns, ns)) {
		t.Errorf("message: %s", c.Message)
	}
	dep, err := get(t, deploymentGVK, ns, "site")
	if err != nil || dep.GetLabels()[v1alpha1.LabelInstallationName] != "" {
		t.Errorf("the Deployment of release site was taken although the adoption was refused: %v (err=%v)", dep.GetLabels(), err)
	}
}

func findCond(inst *v1alpha1.ExtensionInstallation, t string) *metav1.Condition {
	for i := range inst.Status.Conditions {
		if inst.Status.Conditions[i].Type == t {
			return &inst.Status.Conditions[i]
		}
	}
	return &metav1.Condition{}
}
