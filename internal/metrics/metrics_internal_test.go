package metrics

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func installation(cluster string, generation int64, mutate func(*v1alpha1.ExtensionInstallation), conds ...metav1.Condition) v1alpha1.ExtensionInstallation {
	inst := v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", Generation: generation},
		Spec:       v1alpha1.ExtensionInstallationSpec{Cluster: cluster},
		Status:     v1alpha1.ExtensionInstallationStatus{Conditions: conds},
	}
	if mutate != nil {
		mutate(&inst)
	}
	return inst
}

func cond(t string, status metav1.ConditionStatus, generation int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, ObservedGeneration: generation, Reason: "R"}
}

func TestState(t *testing.T) {
	now := metav1.Now()
	cases := []struct {
		name string
		inst v1alpha1.ExtensionInstallation
		want string
	}{
		// Ready for the generation it was asked for.
		{"ready", installation("", 2, nil, cond(v1alpha1.ConditionReady, metav1.ConditionTrue, 2)), StateReady},
		// Ready for an older spec: Annex has not caught up yet.
		{"ready for an old generation", installation("", 3, nil, cond(v1alpha1.ConditionReady, metav1.ConditionTrue, 2)), StateReconciling},
		// Nothing observed yet.
		{"new", installation("", 1, nil), StateReconciling},
		// Stalled for the current generation: a person must act.
		{"stalled", installation("", 1, nil, cond(v1alpha1.ConditionReady, metav1.ConditionFalse, 1), cond(v1alpha1.ConditionStalled, metav1.ConditionTrue, 1)), StateStalled},
		// Stalled for an older spec: the new spec is being worked on.
		{"stalled for an old generation", installation("", 2, nil, cond(v1alpha1.ConditionStalled, metav1.ConditionTrue, 1)), StateReconciling},
		// Suspended wins over its conditions.
		{"suspended", installation("", 1, func(i *v1alpha1.ExtensionInstallation) { i.Spec.Suspend = true },
			cond(v1alpha1.ConditionReady, metav1.ConditionTrue, 1)), StateSuspended},
		// Deleting wins over everything.
		{"deleting", installation("", 1, func(i *v1alpha1.ExtensionInstallation) { i.DeletionTimestamp = &now; i.Spec.Suspend = true },
			cond(v1alpha1.ConditionReady, metav1.ConditionTrue, 1)), StateDeleting},
	}
	for _, tc := range cases {
		if got := State(&tc.inst); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestCount(t *testing.T) {
	waitingApproval := func(i *v1alpha1.ExtensionInstallation) {
		i.Status.Change = &v1alpha1.PendingChange{Approval: &v1alpha1.ChangeApproval{State: v1alpha1.ApprovalPending}}
	}
	approved := func(i *v1alpha1.ExtensionInstallation) {
		i.Status.Change = &v1alpha1.PendingChange{Approval: &v1alpha1.ChangeApproval{State: v1alpha1.ApprovalApproved},
			Hooks: &v1alpha1.HooksSummary{State: v1alpha1.HookPending}}
	}
	drifted := func(i *v1alpha1.ExtensionInstallation) {
		i.Status.Drifted = []v1alpha1.DriftedObject{{Fields: []string{"deleted"}}}
	}
	insts := []v1alpha1.ExtensionInstallation{
		installation("", 1, nil, cond(v1alpha1.ConditionReady, metav1.ConditionTrue, 1)),
		installation("", 1, drifted, cond(v1alpha1.ConditionReady, metav1.ConditionTrue, 1)),
		installation("", 1, waitingApproval),
		installation("edge", 1, approved),
		installation("gone", 1, nil), // names a cluster that has no ManagedCluster
	}
	clusters := []v1alpha1.ManagedCluster{
		{ObjectMeta: metav1.ObjectMeta{Name: "edge"}, Status: v1alpha1.ManagedClusterStatus{Conditions: []metav1.Condition{cond(v1alpha1.ConditionReachable, metav1.ConditionTrue, 1)}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "idle"}, Status: v1alpha1.ManagedClusterStatus{Conditions: []metav1.Condition{cond(v1alpha1.ConditionReachable, metav1.ConditionFalse, 1)}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, // not probed yet
	}
	c := Count(insts, clusters)
	if want := []string{"edge", "gone", "hub", "idle", "new"}; !slices.Equal(c.Clusters, want) {
		t.Errorf("clusters %v, want %v (the hub, every ManagedCluster, every cluster named)", c.Clusters, want)
	}
	for key, want := range map[Key]int{
		{StateReady, HubCluster}: 2, {StateReconciling, HubCluster}: 1,
		{StateReconciling, "edge"}: 1, {StateReconciling, "gone"}: 1, {StateReady, "idle"}: 0,
	} {
		if got := c.ByState[key]; got != want {
			t.Errorf("%v: %d installations, want %d", key, got, want)
		}
	}
	for key, want := range map[Key]int{
		{GateApproval, HubCluster}: 1, {GateHooks, HubCluster}: 0,
		// Approved, its hooks still to answer: waits for hooks only.
		{GateApproval, "edge"}: 0, {GateHooks, "edge"}: 1,
	} {
		if got := c.Waiting[key]; got != want {
			t.Errorf("waiting %v: %d, want %d", key, got, want)
		}
	}
	if c.Drifted[HubCluster] != 1 || len(c.Drifted) != 1 {
		t.Errorf("drifted: %v, want one on the hub", c.Drifted)
	}
	if want := map[string]bool{"edge": true, "idle": false, "new": false}; len(c.Reachable) != 3 ||
		c.Reachable["edge"] != want["edge"] || c.Reachable["idle"] || c.Reachable["new"] {
		t.Errorf("reachable: %v, want %v", c.Reachable, want)
	}
}
