package managedcluster

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestTransitions(t *testing.T) {
	status := func(version string, reachable metav1.ConditionStatus, readyReason string) v1alpha1.ManagedClusterStatus {
		return v1alpha1.ManagedClusterStatus{KubernetesVersion: version, Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionReachable, Status: reachable, Reason: "R", Message: "m"},
			{Type: v1alpha1.ConditionReady, Status: reachable, Reason: readyReason, Message: "m"},
		}}
	}
	up := status("v1.31.0", metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	cases := []struct {
		name          string
		before, after v1alpha1.ManagedClusterStatus
		want          []string
	}{
		// The first probe.
		{"first probe", v1alpha1.ManagedClusterStatus{}, up, []string{"Normal Reachable"}},
		// Recounting installations: no news.
		{"recount", up, up, nil},
		{"goes down", up, status("v1.31.0", metav1.ConditionFalse, v1alpha1.ReasonClusterUnavailable), []string{"Warning Unreachable"}},
		{"comes back", status("v1.31.0", metav1.ConditionFalse, v1alpha1.ReasonClusterUnavailable), up, []string{"Normal Reachable"}},
		// An upgraded cluster.
		{"new version", up, status("v1.32.1", metav1.ConditionTrue, v1alpha1.ReasonSucceeded), []string{"Normal KubernetesVersionChanged"}},
		// Deletion starts removing its installations.
		{"deleting", up, status("v1.31.0", metav1.ConditionTrue, v1alpha1.ReasonUninstalling), []string{"Normal Uninstalling"}},
	}
	for _, tc := range cases {
		var got []string
		for _, n := range transitions(tc.before, tc.after) {
			got = append(got, n.eventType+" "+n.reason)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: events %v, want %v", tc.name, got, tc.want)
		}
	}
}
