package apply

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// On delete, the operator's RBAC stays while a Pod of
// its Deployment (owned by one of its ReplicaSets; no controller runs
// here to delete it) still exists, and goes once it is gone.
func TestDeleteWebhooksFirstRBACAfterPods(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "delete-webhooks"
	createNamespace(t, a, ns)
	owner := Owner{Name: "op", Namespace: "team-a"}
	set := Set{Objects: objects(t,
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: web}}`,
		deploymentDoc("", 0),
		fmt.Sprintf(`
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: vweb.delete.annex.dev}
webhooks:
- name: vweb.delete.annex.dev
  clientConfig: {service: {namespace: %s, name: web-service, path: /validate}}
  rules: [{apiGroups: [delete.annex.dev], apiVersions: ["*"], resources: [gadgets], operations: [CREATE]}]
  admissionReviewVersions: [v1]
  sideEffects: None`, ns),
	)}
	inventory, err := a.Apply(ctx, owner, ns, set)
	if err != nil {
		t.Fatal(err)
	}
	webhook := ref("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "", "vweb.delete.annex.dev")
	deployment := ref("apps", "v1", "Deployment", ns, "web")
	sa := ref("", "v1", "ServiceAccount", ns, "web")

	// A Pod of the Deployment, still stopping when the Deployment goes.
	pod := mustObject(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: web-5d9c7-x2v4q
  namespace: %s
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d9c7, uid: 6f1c3a2e-0000-4000-8000-000000000001}]
spec:
  serviceAccountName: web
  containers: [{name: web, image: "registry.example/web:1.0"}]`, ns))
	if err := a.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// A Pod of it that finished runs nothing: it is not waited for.
	finished := mustObject(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: web-5d9c7-done1
  namespace: %s
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d9c7, uid: 6f1c3a2e-0000-4000-8000-000000000001}]
spec:
  serviceAccountName: web
  containers: [{name: web, image: "registry.example/web:1.0"}]`, ns))
	if err := a.Client.Create(ctx, finished); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(finished.Object, "Succeeded", "status", "phase"); err != nil {
		t.Fatal(err)
	}
	if err := a.Client.Status().Update(ctx, finished); err != nil {
		t.Fatal(err)
	}

	// The webhook configuration and the Deployment go (in that order:
	// TestBundleWebhooks watches it); the RBAC waits for the Pod.
	for range 3 {
		remaining, err := a.Delete(ctx, owner, inventory, false)
		if err != nil {
			t.Fatal(err)
		}
		if remaining == 0 {
			t.Fatal("Delete reports nothing remaining while a Pod of the Deployment runs")
		}
	}
	if read(t, a, webhook) != nil || read(t, a, deployment) != nil {
		t.Error("the webhook configuration or the Deployment is not deleted")
	}
	if read(t, a, sa) == nil {
		t.Fatal("the ServiceAccount was deleted while a Pod of the Deployment still exists")
	}
	if err := a.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	deleteUntilGone(t, a, owner, inventory, false)
	if read(t, a, sa) != nil {
		t.Error("the ServiceAccount is still there after the Pod went")
	}
}

func TestStillRunning(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	for _, tc := range []struct {
		name    string
		deleted *metav1.Time
		want    bool
	}{
		// Not deleted yet: the garbage collector has not reached it.
		{"running", nil, true},
		// In its grace period: the operator is shutting down.
		{"stopping", at(20 * time.Second), true},
		// Its grace period ended a moment ago: the kubelet is at it.
		{"just past its grace period", at(-30 * time.Second), true},
		// Long past its grace period: its node is gone; not waited for.
		{"stuck", at(-2 * time.Minute), false},
	} {
		if got := stillRunning(tc.deleted, now); got != tc.want {
			t.Errorf("%s: stillRunning = %v, want %v", tc.name, got, tc.want)
		}
	}
}
