package installation

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestSummarize(t *testing.T) {
	type want struct {
		ready, reconciling, stalled string // condition status, "" = absent
		reason                      string // Ready's reason
		observed                    int64
	}
	tests := []struct {
		name  string
		scope scope
		err   error
		want  want
	}{
		{
			// Everything applied and healthy: Ready, nothing in progress.
			name:  "healthy",
			scope: scope{outcome: outcome{healthy: true}},
			want:  want{ready: "True", reason: v1alpha1.ReasonSucceeded, observed: 3},
		},
		{
			// A terminal block: Stalled, and observedGeneration moves.
			name:  "terminal",
			scope: scope{block: terminal(v1alpha1.ReasonValuesInvalid, "values.x: bad")},
			want:  want{ready: "False", stalled: "True", reason: v1alpha1.ReasonValuesInvalid, observed: 3},
		},
		{
			// Waiting for a dependency: Reconciling, observedGeneration stays.
			name:  "wait",
			scope: scope{block: wait(v1alpha1.ReasonDependencyNotReady, "needs crd")},
			want:  want{ready: "False", reconciling: "True", reason: v1alpha1.ReasonDependencyNotReady, observed: 1},
		},
		{
			// A plain error (API server) counts as a retry.
			name: "error",
			err:  errors.New("connection refused"),
			want: want{ready: "False", reconciling: "True", reason: v1alpha1.ReasonProgressing, observed: 1},
		},
		{
			// Waited past the timeout: Stalled, but still polled; no generation move.
			name:  "health timeout",
			scope: scope{block: &block{kind: blockStalled, reason: v1alpha1.ReasonHealthTimeout, message: "not healthy"}},
			want:  want{ready: "False", stalled: "True", reason: v1alpha1.ReasonHealthTimeout, observed: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
			inst.Status.ObservedGeneration = 1
			// A stale Stalled condition must be cleared by success.
			setCondition(inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, "Old", "old")
			s := tt.scope
			s.inst = inst
			summarize(&s, tt.err)
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
