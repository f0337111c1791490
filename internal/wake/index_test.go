package wake

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestWaitsOnOthers(t *testing.T) {
	now := metav1.Now()
	cond := func(typ string, status metav1.ConditionStatus, reason string) func(*v1alpha1.ExtensionInstallation) {
		return func(i *v1alpha1.ExtensionInstallation) {
			i.Status.Conditions = append(i.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason})
		}
	}
	for _, tc := range []struct {
		name  string
		edit  func(*v1alpha1.ExtensionInstallation)
		waits bool
	}{
		{"new, no conditions", func(*v1alpha1.ExtensionInstallation) {}, false},
		{"ready", cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded), false},
		{"in progress", cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonProgressing), false},
		{"being deleted", func(i *v1alpha1.ExtensionInstallation) { i.DeletionTimestamp = &now }, true},
		{"added for dependencies", func(i *v1alpha1.ExtensionInstallation) {
			i.Labels = map[string]string{v1alpha1.LabelAddedFor: "ns.app"}
		}, true},
		{"resolution failed", cond(v1alpha1.ConditionResolved, metav1.ConditionFalse, v1alpha1.ReasonNoMatchingVersion), true},
		{"waits for a dependency", cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonDependencyNotReady), true},
		{"conflicts over an object", cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonOwnershipConflict), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := indexed("app", "edge")
			tc.edit(inst)
			if got := WaitsOnOthers(inst); got != tc.waits {
				t.Errorf("WaitsOnOthers = %v, want %v", got, tc.waits)
			}
		})
	}
}

// The waiting index follows each installation's status: it lists an
// installation while it waits on others and drops it once it does not.
func TestInstallationIndexWaitingOn(t *testing.T) {
	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers())
	x := &Index{store: store}

	waiting := indexed("dependent", "edge")
	waiting.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonDependencyNotReady}}
	ready := indexed("dependency", "edge")
	ready.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded}}
	elsewhere := indexed("other", "core")
	elsewhere.Status.Conditions = waiting.Status.Conditions
	for _, inst := range []*v1alpha1.ExtensionInstallation{waiting, ready, elsewhere} {
		if err := store.Add(inst); err != nil {
			t.Fatal(err)
		}
	}

	expectNames(t, "On(edge)", x.On, "edge", "dependency", "dependent")
	expectNames(t, "WaitingOn(edge)", x.WaitingOn, "edge", "dependent")
	expectNames(t, "WaitingOn(core)", x.WaitingOn, "core", "other")

	released := waiting.DeepCopy()
	released.Status.Conditions = ready.Status.Conditions
	if err := store.Update(released); err != nil {
		t.Fatal(err)
	}
	expectNames(t, "WaitingOn(edge) after it became Ready", x.WaitingOn, "edge")
	expectNames(t, "On(edge) after it became Ready", x.On, "edge", "dependency", "dependent")
}

func indexed(name, cluster string) *v1alpha1.ExtensionInstallation {
	return &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: name, Cluster: cluster},
	}
}

func expectNames(t *testing.T, what string, read func(string) ([]*v1alpha1.ExtensionInstallation, error), cluster string, want ...string) {
	t.Helper()
	insts, err := read(cluster)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var got []string
	for _, i := range insts {
		got = append(got, i.Name)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
