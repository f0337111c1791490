package profile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestClusterChangeMatters(t *testing.T) {
	base := &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"env": "prod"}}}
	base.Status.KubernetesVersion = "v1.37.1"
	base.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReachable, Status: metav1.ConditionTrue}}
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.ManagedCluster)
		want   bool
	}{
		{"ready installations counted", func(mc *v1alpha1.ManagedCluster) { mc.Status.ReadyInstallations++; mc.Status.Installations++ }, false},
		{"probe message", func(mc *v1alpha1.ManagedCluster) { mc.Status.Conditions[0].Message = "Kubernetes v1.37.1, 3 nodes" }, false},
		{"label", func(mc *v1alpha1.ManagedCluster) { mc.Labels["env"] = "dev" }, true},
		{"annotation (Default record)", func(mc *v1alpha1.ManagedCluster) {
			mc.Annotations = map[string]string{v1alpha1.AnnotationProfileDefaultsPrefix + "p": "x"}
		}, true},
		{"unreachable", func(mc *v1alpha1.ManagedCluster) { mc.Status.Conditions[0].Status = metav1.ConditionFalse }, true},
		{"kubernetes version", func(mc *v1alpha1.ManagedCluster) { mc.Status.KubernetesVersion = "v1.38.0" }, true},
		{"deleted", func(mc *v1alpha1.ManagedCluster) { now := metav1.Now(); mc.DeletionTimestamp = &now }, true},
		{"maintenance window", func(mc *v1alpha1.ManagedCluster) {
			mc.Spec.MaintenanceWindows = []v1alpha1.MaintenanceWindow{{Schedule: "0 2 * * *"}}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tc.change(cur)
			if got := clusterChangeMatters().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: cur}); got != tc.want {
				t.Errorf("wakes profiles: %v, want %v", got, tc.want)
			}
		})
	}
}
