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
