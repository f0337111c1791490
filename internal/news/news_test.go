package news

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestTransitions(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason, message string, gen int64) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionReady, Status: status, Reason: reason, Message: message, ObservedGeneration: gen}
	}
	healthy := Standing{Ready: ready(metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "app 1.0.0 is installed and healthy", 2)}
	applying := Standing{Ready: ready(metav1.ConditionFalse, v1alpha1.ReasonWaitingForHealth, "1 of 4 objects not ready", 2)}
	bad := terminal(v1alpha1.ReasonValuesInvalid, "spec.values: replicas: must be >= 0")
	stoppedOnBad := Standing{Ready: ready(metav1.ConditionFalse, bad.Reason, bad.Message, 2)}
	approvalWait := wait(v1alpha1.ReasonApprovalRequired, "the change to 2.0.0 needs an Approval")
	waitingApproval := Standing{Ready: ready(metav1.ConditionFalse, approvalWait.Reason, approvalWait.Message, 2), Waiting: GateApproval, Digest: "sha256:a"}
	cases := []struct {
		name          string
		before, after Standing
		b             *Stop
		want          []string // "type reason"
	}{
		// A first install becomes healthy: Ready, once.
		{"became ready", applying, healthy, nil, []string{"Normal Ready"}},
		// A resync of a healthy installation: no news.
		{"stays ready", healthy, healthy, nil, nil},
		// Ready for the previous generation only: the new spec became Ready.
		{"ready for a new spec", Standing{Ready: ready(metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "m", 1)}, healthy, nil, []string{"Normal Ready"}},
		// Waiting for health is no news.
		{"waiting for health", healthy, applying, wait(v1alpha1.ReasonWaitingForHealth, "1 of 4 objects not ready"), nil},
		// A new terminal failure is told, once.
		{"terminal", applying, stoppedOnBad, bad, []string{"Warning ValuesInvalid"}},
		{"same terminal again", stoppedOnBad, stoppedOnBad, bad, nil},
		// The same kind of failure with another message is another problem.
		{"another terminal of the same kind", stoppedOnBad, stoppedOnBad, terminal(bad.Reason, "spec.values: message: required"), []string{"Warning ValuesInvalid"}},
		// A retried failure is told when it starts, not on every retry
		// (its message may change from one try to the next).
		{"retry starts", healthy, applying, retry(v1alpha1.ReasonClusterUnavailable, "cannot reach cluster edge: timeout"), []string{"Warning ClusterUnavailable"}},
		{"retry goes on", Standing{Ready: ready(metav1.ConditionFalse, v1alpha1.ReasonClusterUnavailable, "x", 2)}, applying,
			retry(v1alpha1.ReasonClusterUnavailable, "cannot reach cluster edge: refused"), nil},
		// A change begins to wait for an Approval: told once per change.
		{"approval required", healthy, waitingApproval, approvalWait, []string{"Normal ApprovalRequired"}},
		{"approval still required", waitingApproval, waitingApproval, approvalWait, nil},
		{"another change needs approval", waitingApproval, Standing{Ready: waitingApproval.Ready, Waiting: GateApproval, Digest: "sha256:b"}, approvalWait, []string{"Normal ApprovalRequired"}},
		// Only self-approvals: a warning.
		{"approval refused", waitingApproval, Standing{Ready: waitingApproval.Ready, Waiting: GateApproval, Digest: "sha256:a"},
			wait(v1alpha1.ReasonApprovalRefused, "Approval a by alice: alice requested this change"), []string{"Warning ApprovalRefused"}},
		// Hooks to answer.
		{"hooks pending", healthy, Standing{Waiting: GateHooks, Digest: "sha256:a"}, wait(v1alpha1.ReasonHookPending, "waiting for hook scan"), []string{"Normal HookPending"}},
		// A deletion held by dependents.
		{"deletion held", healthy, healthy, wait(v1alpha1.ReasonDeletionHeld, "deletion held: needed by ns/web"), []string{"Normal DeletionHeld"}},
	}
	for _, tc := range cases {
		var got []string
		for _, n := range Transitions(tc.before, tc.after, 2, tc.b) {
			got = append(got, n.Type+" "+n.Reason)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: events %v, want %v", tc.name, got, tc.want)
		}
	}
}

// An apply and the Ready it led to in the same reconcile are one Event,
// the apply's; other transitions follow it.
func TestNews(t *testing.T) {
	applied := &Note{"Normal", "Installed", "applied app 1.0.0 (revision 1, 4 objects)"}
	ready := Note{"Normal", ReasonBecameReady, "app 1.0.0 is installed and healthy"}
	failed := Note{"Warning", v1alpha1.ReasonApplyFailed, "apply failed"}
	cases := []struct {
		name    string
		applied *Note
		trans   []Note
		want    []Note
	}{
		{"nothing", nil, nil, nil},
		{"transitions only", nil, []Note{ready}, []Note{ready}},
		{"applied, not ready yet", applied, nil, []Note{*applied}},
		{"applied and ready", applied, []Note{ready},
			[]Note{{"Normal", "Installed", "applied app 1.0.0 (revision 1, 4 objects); app 1.0.0 is installed and healthy"}}},
		{"applied, then another transition", applied, []Note{failed}, []Note{*applied, failed}},
	}
	for _, tc := range cases {
		if got := Of(tc.applied, tc.trans); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if applied.Message != "applied app 1.0.0 (revision 1, 4 objects)" {
		t.Errorf("Of changed the applied note: %q", applied.Message)
	}
}

func terminal(reason, message string) *Stop {
	return &Stop{Kind: Terminal, Reason: reason, Message: message}
}
func retry(reason, message string) *Stop { return &Stop{Kind: Retry, Reason: reason, Message: message} }
func wait(reason, message string) *Stop  { return &Stop{Kind: Wait, Reason: reason, Message: message} }

func TestRevisionOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status v1alpha1.ExtensionInstallationStatus
		want   int64
	}{
		// Nothing applied yet.
		{name: "new", want: 0},
		// The last recorded revision (history is newest first).
		{name: "recorded", status: v1alpha1.ExtensionInstallationStatus{History: []v1alpha1.Revision{{Number: 4}, {Number: 3}}}, want: 4},
		// A revision being applied is the one its Events speak of.
		{name: "pending", status: v1alpha1.ExtensionInstallationStatus{Pending: &v1alpha1.Revision{Number: 5}, History: []v1alpha1.Revision{{Number: 4}}}, want: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RevisionOf(&v1alpha1.ExtensionInstallation{Status: tc.status}); got != tc.want {
				t.Errorf("RevisionOf() = %d, want %d", got, tc.want)
			}
		})
	}
}
