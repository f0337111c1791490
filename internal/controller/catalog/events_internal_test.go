package catalog

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestTransitions(t *testing.T) {
	t1, t2 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason + " message"}
	}
	synced := func(at *metav1.Time, extra ...metav1.Condition) v1alpha1.CatalogStatus {
		return v1alpha1.CatalogStatus{LastChangeTime: at, Conditions: append([]metav1.Condition{cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)}, extra...)}
	}
	down := v1alpha1.CatalogStatus{Conditions: []metav1.Condition{cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonFetchFailed)}}
	stale := cond(ConditionFetchFailed, metav1.ConditionTrue, v1alpha1.ReasonFetchFailed)
	cases := []struct {
		name          string
		before, after v1alpha1.CatalogStatus
		want          []string
	}{
		// The first sync.
		{"first sync", v1alpha1.CatalogStatus{}, synced(&t1), []string{"Normal Synced"}},
		// New content.
		{"new content", synced(&t1), synced(&t2), []string{"Normal Synced"}},
		// Another write with the same content (a count, a message): no news.
		{"same content", synced(&t1), synced(&t1), nil},
		// The first read fails: nothing to serve.
		{"source down", v1alpha1.CatalogStatus{}, down, []string{"Warning FetchFailed"}},
		{"still down", down, down, nil},
		// The source goes down while the last good content is served, and
		// comes back.
		{"stale", synced(&t1), synced(&t1, stale), []string{"Warning FetchFailed"}},
		{"still stale", synced(&t1, stale), synced(&t1, stale), nil},
		{"recovered", synced(&t1, stale), synced(&t1), []string{"Normal FetchRecovered"}},
		// Suspended is told as it is, not as a failure.
		{"suspended", synced(&t1), v1alpha1.CatalogStatus{LastChangeTime: &t1, Conditions: []metav1.Condition{cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSuspended)}},
			[]string{"Normal Suspended"}},
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
