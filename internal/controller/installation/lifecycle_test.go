package installation_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/record"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

var jobGVK = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}

func everySecond(i *v1alpha1.ExtensionInstallation) {
	i.Spec.Interval = metav1.Duration{Duration: time.Second}
}

func TestDriftIsCorrected(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, podinfoChart("drift1", "1.0.0", nil))
	inst := install(t, ns, "web", "drift1", "", everySecond)
	waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")

	// Deleted behind Annex's back: recreated.
	cm, err := get(t, configMapGVK, ns, "web-config")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		again, err := get(t, configMapGVK, ns, "web-config")
		if err != nil {
			return err
		}
		if again.GetUID() == cm.GetUID() {
			return fmt.Errorf("not recreated yet")
		}
		return nil
	})

	// Changed by someone else: restored.
	patch := []byte(`{"data":{"message":"tampered"}}`)
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(configMapGVK)
	obj.SetNamespace(ns)
	obj.SetName("web-config")
	if err := env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		cur, err := get(t, configMapGVK, ns, "web-config")
		if err != nil {
			return err
		}
		if msg, _, _ := unstructured.NestedString(cur.Object, "data", "message"); msg != "hello" {
			return fmt.Errorf("message still %q", msg)
		}
		return nil
	})
	got, _ := getInstallation(t, ns, "web")
	if len(got.Status.Drifted) != 0 || !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
		t.Fatalf("after correction: drifted %v, conditions %s", got.Status.Drifted, describeConditions(got))
	}
}

func TestDriftWarnOnlyLists(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, podinfoChart("drift2", "1.0.0", nil))
	inst := install(t, ns, "web", "drift2", "", everySecond, func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.DriftDetection = v1alpha1.DriftDetectionWarn
	})
	waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	svc, err := get(t, serviceGVK, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		got, err := getInstallation(t, ns, "web")
		if err != nil {
			return err
		}
		if len(got.Status.Drifted) != 1 || got.Status.Drifted[0].Kind != "Service" || got.Status.Drifted[0].Fields[0] != "deleted" {
			return fmt.Errorf("drifted: %+v", got.Status.Drifted)
		}
		return nil
	})
	if _, err := get(t, serviceGVK, ns, "web"); !apierrors.IsNotFound(err) {
		t.Fatalf("Warn must not recreate the Service (err=%v)", err)
	}
}

func TestRevisionRecordsAndTakeOwnership(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, podinfoChart("rec", "1.0.0", nil), podinfoChart("rec", "1.1.0", nil))
	// An object someone created before: adopted with spec.takeOwnership.
	pre := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}, Data: map[string]string{"message": "mine"}}
	if err := env.Client.Create(ctx, pre, client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}
	inst := install(t, ns, "web", "rec", "1.0.x", func(i *v1alpha1.ExtensionInstallation) { i.Spec.TakeOwnership = true })
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	cm, _ := get(t, configMapGVK, ns, "web-config")
	if cm.GetLabels()[v1alpha1.LabelInstallationName] != "web" {
		t.Fatalf("not adopted: labels %v", cm.GetLabels())
	}

	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Version = "1.1.x"
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if got.Status.InstalledVersion != "1.1.0" || got.Status.Pending != nil {
		t.Fatalf("installed %s pending %+v", got.Status.InstalledVersion, got.Status.Pending)
	}
	records := func() []string {
		var list corev1.SecretList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelInstallationName: "web"}); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range list.Items {
			if s.Type == v1alpha1.RevisionSecretType {
				names = append(names, s.Name)
			}
		}
		return names
	}
	if names := strings.Join(records(), ","); names != "annex.web.v1,annex.web.v2" {
		t.Fatalf("revision records: %s", names)
	}

	if err := env.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "web")
	if names := records(); len(names) != 0 {
		t.Fatalf("records left after uninstall: %v", names)
	}
}

func TestFailedHookIsReported(t *testing.T) {
	ns, _ := setup(t, helmrepo.Chart{Name: "hooked", Version: "1.0.0", Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata: {a: b}\n",
		"templates/job.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations: {helm.sh/hook: pre-install}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "registry.example/migrate:1.0"}]
`,
	}})
	inst := install(t, ns, "db", "hooked", "")
	// The test API server runs no Job controller: stand in for it.
	var job *unstructured.Unstructured
	eventually(t, 30*time.Second, func() error {
		var err error
		job, err = get(t, jobGVK, ns, "db-migrate")
		return err
	})
	now := time.Now().UTC().Format(time.RFC3339)
	failed := fmt.Sprintf(`{"status":{"startTime":%q,"failed":1,"conditions":[
		{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit","lastTransitionTime":%[1]q},
		{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit","lastTransitionTime":%[1]q}]}}`, now)
	if err := env.Client.Status().Patch(context.Background(), job, client.RawPatch(types.MergePatchType, []byte(failed))); err != nil {
		t.Fatal(err)
	}
	// A failed first install: reported, remediated (Keep: left for
	// inspection), and not retried until the spec changes.
	got := waitCondition(t, inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonInstallFailed)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	if !strings.Contains(ready.Message, "pre-install hook Job "+ns+"/db-migrate failed") || !strings.Contains(ready.Message, "backoff limit") {
		t.Fatalf("the message must name the Job and its failure: %s", ready.Message)
	}
	// Nothing but the hook was applied: the pre-install hook failed first.
	if _, err := get(t, configMapGVK, ns, "db"); !apierrors.IsNotFound(err) {
		t.Fatalf("the chart's objects must wait for the pre-install hook (err=%v)", err)
	}
}

// unhealthyChart renders a Deployment with one replica: no controller runs
// in the test API server, so it never becomes Available.
func unhealthyChart(name, version string, withSecret bool) helmrepo.Chart {
	files := map[string]string{
		"templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec: {containers: [{name: app, image: "registry.k8s.io/pause:3.10"}]}
`,
		"values.yaml": "replicas: 1\n",
	}
	if withSecret {
		files["templates/secret.yaml"] = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-token\nstringData: {token: t}\n"
	}
	return helmrepo.Chart{Name: name, Version: version, Files: files}
}

func TestFailedUpgradeRollsBack(t *testing.T) {
	ctx := context.Background()
	// 1.0.0 is healthy with replicas 0 and has a Secret; 2.0.0 drops the
	// Secret and never becomes healthy.
	good := unhealthyChart("roll", "1.0.0", true)
	good.Files["values.yaml"] = "replicas: 0\n"
	ns, _ := setup(t, good, unhealthyChart("roll", "2.0.0", false))
	inst := install(t, ns, "app", "roll", "1.x", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Timeout = metav1.Duration{Duration: 2 * time.Second}
		i.Spec.Upgrade.Retries = ptrTo(int32(1))
	})
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")

	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Version = "2.x"
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonRolledBack)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	if !strings.Contains(ready.Message, "upgrade to roll 2.0.0 failed after 2 attempts") ||
		!strings.Contains(ready.Message, "rolled back to roll 1.0.0") {
		t.Fatalf("Ready: %s", ready.Message)
	}
	if got.Status.InstalledVersion != "1.0.0" || got.Status.FailedTarget == nil || got.Status.FailedTarget.Version != "2.0.0" {
		t.Fatalf("installed %s failedTarget %+v", got.Status.InstalledVersion, got.Status.FailedTarget)
	}
	// The pruned Secret is back and the Deployment is at 1.0.0's replicas.
	if _, err := get(t, schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, ns, "app-token"); err != nil {
		t.Fatalf("the Secret 2.0.0 pruned must be restored: %v", err)
	}
	deploy, _ := get(t, deploymentGVK, ns, "app")
	if n, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); n != 0 {
		t.Fatalf("replicas %d, want 1.0.0's 0", n)
	}
}

func TestFailedInstallIsUninstalled(t *testing.T) {
	ns, _ := setup(t, unhealthyChart("never", "1.0.0", true))
	inst := install(t, ns, "app", "never", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Timeout = metav1.Duration{Duration: 2 * time.Second}
		i.Spec.Install.Remediation = "Uninstall"
	})
	got := waitCondition(t, inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonInstallFailed)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	if !strings.Contains(ready.Message, "install of never 1.0.0 failed") || !strings.Contains(ready.Message, "uninstalled what was applied") {
		t.Fatalf("Ready: %s", ready.Message)
	}
	if _, err := get(t, deploymentGVK, ns, "app"); !apierrors.IsNotFound(err) {
		t.Fatalf("the failed install's Deployment must be removed (err=%v)", err)
	}
	if len(got.Status.Inventory) != 0 {
		t.Fatalf("inventory %v", got.Status.Inventory)
	}
}

func ptrTo[T any](v T) *T { return &v }

// strayAttempt stands for an apply of revision n that crashed after it
// recorded its intent and applied one object, a ConfigMap the installed
// revision does not have: the object carries the installation's labels,
// and only the record of revision n lists it.
func strayAttempt(t *testing.T, inst *v1alpha1.ExtensionInstallation, n int64, configMap string) {
	t.Helper()
	ctx := context.Background()
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: inst.Namespace, Name: configMap, Labels: map[string]string{
		v1alpha1.LabelManagedBy:             v1alpha1.ManagedByValue,
		v1alpha1.LabelInstallationName:      inst.Name,
		v1alpha1.LabelInstallationNamespace: inst.Namespace,
	}}}
	if err := env.Client.Create(ctx, stray); err != nil {
		t.Fatal(err)
	}
	data, err := record.Encode(record.Record{Revision: n, Version: "9.9.9", Inventory: []v1alpha1.ObjectReference{
		{Version: "v1", Kind: "ConfigMap", Namespace: inst.Namespace, Name: configMap},
	}})
	if err != nil {
		t.Fatal(err)
	}
	record := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: inst.Namespace, Name: fmt.Sprintf("annex.%s.v%d", inst.Name, n), Labels: map[string]string{
			v1alpha1.LabelInstallationName: inst.Name,
			v1alpha1.LabelRevision:         fmt.Sprint(n),
		}},
		Type: v1alpha1.RevisionSecretType,
		Data: map[string][]byte{"record": data.Index},
	}
	if err := env.Client.Create(ctx, record); err != nil {
		t.Fatal(err)
	}
}

// What an apply that crashed after recording its intent may have applied is
// owned: the next apply prunes it when its set no longer has it, and an
// uninstall removes it, although no status ever listed it.
func TestCrashedAttemptIsTakenOver(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, podinfoChart("crashed", "1.0.0", nil), podinfoChart("crashed", "1.1.0", nil))
	inst := install(t, ns, "web", "crashed", "1.0.x")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")

	// Revision 2 crashed; the upgrade takes it over under a new number:
	// a number is never reused for different content.
	strayAttempt(t, got, 2, "web-stray")
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Version = "1.1.x"
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if n := got.Status.History[0].Number; got.Status.InstalledVersion != "1.1.0" || n != 3 {
		t.Fatalf("installed %s as revision %d, want 1.1.0 as revision 3", got.Status.InstalledVersion, n)
	}
	// The crashed attempt's record goes once the status supersedes it.
	eventually(t, 30*time.Second, func() error {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "annex.web.v2"}, &corev1.Secret{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the record of the crashed revision 2 is still there (err=%v)", err)
	})
	if _, err := get(t, configMapGVK, ns, "web-stray"); !apierrors.IsNotFound(err) {
		t.Fatalf("the crashed attempt's ConfigMap must be pruned (err=%v)", err)
	}
	for _, ref := range got.Status.Inventory {
		if ref.Name == "web-stray" {
			t.Fatalf("the pruned ConfigMap is still in the inventory: %v", got.Status.Inventory)
		}
	}

	// Revision 4 crashed; the installation is deleted before any reconcile.
	strayAttempt(t, got, 4, "web-stray-3")
	if err := env.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "web")
	if _, err := get(t, configMapGVK, ns, "web-stray-3"); !apierrors.IsNotFound(err) {
		t.Fatalf("the uninstall must remove what the crashed attempt applied (err=%v)", err)
	}
	var secrets corev1.SecretList
	if err := env.Client.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelInstallationName: "web"}); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 0 {
		t.Fatalf("%d records left after uninstall", len(secrets.Items))
	}
}
