package readiness

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/target"
)

func TestJudge(t *testing.T) {
	applied := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	const timeout = 5 * time.Minute
	for _, tc := range []struct {
		name          string
		ready, failed bool
		after         time.Duration
		rollsBack     bool
		want          Verdict
	}{
		{"ready", true, false, time.Hour, true, Healthy},
		{"not ready within the timeout", false, false, timeout, true, Waiting},
		{"past the timeout, rolls back", false, false, timeout + time.Second, true, AttemptFailed},
		{"past the timeout, a release of plans", false, false, timeout + time.Second, false, Stalled},
		{"failed at once, rolls back", false, true, 0, true, AttemptFailed},
		{"failed at once, a release of plans", false, true, 0, false, Stalled},
	} {
		if got := Judge(tc.ready, tc.failed, applied, applied.Add(tc.after), timeout, tc.rollsBack); got != tc.want {
			t.Errorf("%s: Judge = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTimeoutOf(t *testing.T) {
	inst := &v1alpha1.ExtensionInstallation{}
	if got := TimeoutOf(inst); got != DefaultTimeout {
		t.Errorf("TimeoutOf(no spec.timeout) = %s, want %s", got, DefaultTimeout)
	}
	inst.Spec.Timeout = metav1.Duration{Duration: time.Minute}
	if got := TimeoutOf(inst); got != time.Minute {
		t.Errorf("TimeoutOf(1m) = %s, want 1m", got)
	}
}

// Health says what a read means for the installation: its status when
// healthy, and the stop (or the failed attempt's reason and message)
// otherwise.
func TestHealth(t *testing.T) {
	applied := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		h         target.Health
		after     time.Duration
		rollsBack bool
		want      Verdict
		stop      news.Stop
	}{
		{name: "healthy", h: target.Health{Ready: true}, want: Healthy},
		{name: "waiting", h: target.Health{Summary: "Deployment web: 0/1 ready"}, rollsBack: true, want: Waiting,
			stop: news.Stop{Kind: news.Wait, Reason: v1alpha1.ReasonWaitingForHealth, Message: "Deployment web: 0/1 ready"}},
		{name: "failed attempt", h: target.Health{Failed: true, Summary: "Job migrate failed"}, rollsBack: true, want: AttemptFailed,
			stop: news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonHealthTimeout, Message: "not healthy within spec.timeout (5m0s): Job migrate failed"}},
		{name: "stalled", h: target.Health{Summary: "Deployment web: 0/1 ready"}, after: time.Hour, want: Stalled,
			stop: news.Stop{Kind: news.Stalled, Reason: v1alpha1.ReasonHealthTimeout, Message: "Deployment web: 0/1 ready"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{}
			inst.Status.History = []v1alpha1.Revision{{Number: 7, AppliedAt: metav1.NewTime(applied)}}
			inst.Status.Failures, inst.Status.FailedTarget = 2, &v1alpha1.FailedTarget{Version: "1.0.0"}
			got, stop := Health(inst, tc.h, applied.Add(tc.after), tc.rollsBack)
			if got != tc.want || (stop == nil) != (tc.want == Healthy) || stop != nil && *stop != tc.stop {
				t.Fatalf("Health = %v, %+v; want %v, %+v", got, stop, tc.want, tc.stop)
			}
			if healthy := inst.Status.Failures == 0 && inst.Status.FailedTarget == nil && inst.Status.LastHealthyRevision == 7; healthy != (tc.want == Healthy) {
				t.Fatalf("status %+v", inst.Status)
			}
		})
	}
}
