package readiness

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
)

func TestSummarize(t *testing.T) {
	type want struct {
		ready, reconciling, stalled string // condition status, "" = absent
		reason                      string // Ready's reason
		observed                    int64
	}
	tests := []struct {
		name    string
		outcome Outcome
		want    want
	}{
		{
			// Everything applied and healthy: Ready, nothing in progress.
			name:    "healthy",
			outcome: Outcome{Healthy: true},
			want:    want{ready: "True", reason: v1alpha1.ReasonSucceeded, observed: 3},
		},
		{
			// A terminal block: Stalled, and observedGeneration moves.
			name:    "terminal",
			outcome: Outcome{Stop: &news.Stop{Kind: news.Terminal, Reason: v1alpha1.ReasonValuesInvalid, Message: "values.x: bad"}},
			want:    want{ready: "False", stalled: "True", reason: v1alpha1.ReasonValuesInvalid, observed: 3},
		},
		{
			// Waiting for a dependency: Reconciling, observedGeneration stays.
			name:    "wait",
			outcome: Outcome{Stop: &news.Stop{Kind: news.Wait, Reason: v1alpha1.ReasonDependencyNotReady, Message: "needs crd"}},
			want:    want{ready: "False", reconciling: "True", reason: v1alpha1.ReasonDependencyNotReady, observed: 1},
		},
		{
			// A plain error (API server) counts as a retry.
			name:    "error",
			outcome: Outcome{Err: errors.New("connection refused")},
			want:    want{ready: "False", reconciling: "True", reason: v1alpha1.ReasonProgressing, observed: 1},
		},
		{
			// Waited past the timeout: Stalled, but still polled; no generation move.
			name:    "health timeout",
			outcome: Outcome{Stop: &news.Stop{Kind: news.Stalled, Reason: v1alpha1.ReasonHealthTimeout, Message: "not healthy"}},
			want:    want{ready: "False", stalled: "True", reason: v1alpha1.ReasonHealthTimeout, observed: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
			inst.Status.ObservedGeneration = 1
			// A stale Stalled condition must be cleared by success.
			Set(inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, "Old", "old")
			Summarize(inst, tt.outcome)
			check := func(condType, want string) {
				c := meta.FindStatusCondition(inst.Status.Conditions, condType)
				got := ""
				if c != nil {
					got = string(c.Status)
					if c.ObservedGeneration != 3 {
						t.Errorf("%s: observedGeneration %d, want 3", condType, c.ObservedGeneration)
					}
				}
				if got != want {
					t.Errorf("%s = %q, want %q", condType, got, want)
				}
			}
			check(v1alpha1.ConditionReady, tt.want.ready)
			check(v1alpha1.ConditionReconciling, tt.want.reconciling)
			check(v1alpha1.ConditionStalled, tt.want.stalled)
			if r := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady); r.Reason != tt.want.reason {
				t.Errorf("Ready reason %q, want %q", r.Reason, tt.want.reason)
			}
			if inst.Status.ObservedGeneration != tt.want.observed {
				t.Errorf("observedGeneration %d, want %d", inst.Status.ObservedGeneration, tt.want.observed)
			}
		})
	}
}

// A healthy installation's Ready message names the resources of
// spec.resources; a suspended one says so in Reconciling and leaves Ready.
func TestSummarizeMessages(t *testing.T) {
	inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	inst.Spec.Extension, inst.Status.InstalledVersion = "banner", "1.0.0"
	inst.Status.Resources = []v1alpha1.ResourceStatus{{Kind: "Banner", Namespace: "default", Name: "hello"}}
	Summarize(inst, Outcome{Healthy: true})
	if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady); c == nil ||
		c.Message != "banner 1.0.0 is installed and healthy (0 objects); its resource Banner default/hello is ready" {
		t.Errorf("Ready = %+v", c)
	}
	inst.Status.Resources = append(inst.Status.Resources, v1alpha1.ResourceStatus{Kind: "Banner", Name: "global"})
	Summarize(inst, Outcome{Healthy: true})
	if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady); !strings.HasSuffix(c.Message, "; its 2 resources are ready: Banner default/hello, Banner global") {
		t.Errorf("Ready message = %q", c.Message)
	}
	inst.Generation = 3
	Summarize(inst, Outcome{Suspended: true, Stop: &news.Stop{Kind: news.Wait, Reason: "X", Message: "x"}})
	if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReconciling); c == nil || c.Reason != v1alpha1.ReasonSuspended {
		t.Errorf("Reconciling = %+v, want Suspended", c)
	}
	if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady); c.ObservedGeneration != 2 || !IsReady(&v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: inst.Status}) {
		t.Errorf("a suspended installation's Ready changed: %+v", c)
	}
	if inst.Status.ObservedGeneration != 3 {
		t.Errorf("observedGeneration %d, want 3", inst.Status.ObservedGeneration)
	}
}
