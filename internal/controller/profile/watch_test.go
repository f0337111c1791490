package profile

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// recordingQueue records the adds a handler makes.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	adds []string // "<name>" at once, "<name>+<delay>" delayed
}

func (q *recordingQueue) Add(r reconcile.Request) { q.adds = append(q.adds, r.Name) }
func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.adds = append(q.adds, r.Name+"+"+d.String())
}

func TestBatcherWakesAtOnceThenOncePerBatch(t *testing.T) {
	now := time.Unix(0, 0)
	b := newBatcher(time.Second)
	b.now = func() time.Time { return now }
	q := &recordingQueue{}
	of := func(profile string) *v1alpha1.ExtensionInstallation {
		return &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Name: "i", Labels: map[string]string{v1alpha1.LabelProfile: profile}}}
	}
	b.add(of("a"), q) // quiet: at once
	now = now.Add(300 * time.Millisecond)
	b.add(of("a"), q) // within the batch: at its end
	b.add(of("b"), q) // another profile has its own batch
	now = now.Add(900 * time.Millisecond)
	b.add(of("a"), q) // the batch is over: at once again
	b.add(&v1alpha1.ExtensionInstallation{}, q)
	want := []string{"a", "a+700ms", "b", "a"}
	if len(q.adds) != len(want) {
		t.Fatalf("adds %v, want %v", q.adds, want)
	}
	for i := range want {
		if q.adds[i] != want[i] {
			t.Fatalf("adds %v, want %v", q.adds, want)
		}
	}
}

func TestBatcherRelabelWakesBothProfiles(t *testing.T) {
	b := newBatcher(time.Second)
	q := &recordingQueue{}
	old := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelProfile: "old"}}}
	cur := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelProfile: "new"}}}
	b.handler().Update(t.Context(), event.UpdateEvent{ObjectOld: old, ObjectNew: cur}, q)
	if len(q.adds) != 2 || q.adds[0] != "new" || q.adds[1] != "old" {
		t.Fatalf("adds %v, want [new old]", q.adds)
	}
}

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
