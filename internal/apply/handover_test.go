package apply

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What decides between one metadata write and an apply: the answer of a
// forced dry-run apply equals the live object but for the owner's labels
// and the bookkeeping an apply updates.
func TestSameButOwnerLabels(t *testing.T) {
	live := `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team-a, resourceVersion: "7", generation: 1, labels: {app: web, app.kubernetes.io/managed-by: Helm},
  managedFields: [{manager: helm, operation: Apply}]}
spec: {replicas: 2}`
	for _, c := range []struct {
		name, applied string
		same          bool
	}{
		// Annex's labels (managed-by replacing Helm's), a new
		// resourceVersion and managedFields: the same object.
		{"labels only", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team-a, resourceVersion: "8", generation: 1,
  labels: {app: web, app.kubernetes.io/managed-by: annex, annex.dev/installation: web, annex.dev/installation-namespace: team-a},
  managedFields: [{manager: annex, operation: Apply}]}
spec: {replicas: 2}`, true},
		// The spec changes: an apply is needed.
		{"spec", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team-a, generation: 2, labels: {app: web, app.kubernetes.io/managed-by: annex, annex.dev/installation: web, annex.dev/installation-namespace: team-a}}
spec: {replicas: 3}`, false},
		// Another label of the chart changes: an apply is needed.
		{"chart label", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team-a, generation: 1, labels: {app: site, app.kubernetes.io/managed-by: annex, annex.dev/installation: web, annex.dev/installation-namespace: team-a}}
spec: {replicas: 2}`, false},
	} {
		if got := sameButOwnerLabels(mustObject(t, c.applied), mustObject(t, live)); got != c.same {
			t.Errorf("%s: same %v, want %v", c.name, got, c.same)
		}
	}
}

func TestWithoutManagers(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "annex", Operation: metav1.ManagedFieldsOperationApply},
		{Manager: "helm", Operation: metav1.ManagedFieldsOperationApply},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
		{Manager: "helm-controller", Operation: metav1.ManagedFieldsOperationUpdate},
	}
	got := withoutManagers(entries, []string{"helm", "helm-controller"})
	want := []metav1.ManagedFieldsEntry{entries[0], entries[2]}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("withoutManagers: %+v", got)
	}
	if len(entries) != 4 {
		t.Error("withoutManagers changed its argument")
	}
}

// A claim turns the entries of the other tool's managers (helm's apply,
// helm-controller's update) into one entry of Annex's applies owning the
// union of their fields; their entries on a subresource go, everyone
// else's stay.
func TestHandedOver(t *testing.T) {
	fields := func(raw string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(raw)} }
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "helm", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1", FieldsType: "FieldsV1",
			FieldsV1: fields(`{"f:spec":{"f:replicas":{}}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: fields(`{"f:status":{}}`)},
		{Manager: "helm-controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", FieldsType: "FieldsV1",
			FieldsV1: fields(`{"f:metadata":{"f:labels":{"f:app":{}}}}`)},
		{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: fields(`{"f:status":{"f:x":{}}}`)},
		{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: fields(`{"f:spec":{"f:paused":{}}}`)},
	}
	got, err := handedOver(entries, []string{"helm", "helm-controller"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !reflect.DeepEqual(got[0], entries[1]) || !reflect.DeepEqual(got[1], entries[4]) {
		t.Fatalf("handedOver kept %+v", got)
	}
	claim := got[2]
	if claim.Manager != "annex" || claim.Operation != metav1.ManagedFieldsOperationApply || claim.APIVersion != "apps/v1" || claim.Subresource != "" {
		t.Errorf("claim entry %+v", claim)
	}
	if want := `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{}}}`; string(claim.FieldsV1.Raw) != want {
		t.Errorf("claim fields %s, want %s", claim.FieldsV1.Raw, want)
	}
	if entries[0].Manager != "helm" {
		t.Error("handedOver changed its argument")
	}
	// No entry of theirs: nothing to claim.
	none, err := handedOver(entries[1:2], []string{"helm"})
	if err != nil || len(none) != 1 {
		t.Errorf("without their entries: %+v (err=%v)", none, err)
	}
}
