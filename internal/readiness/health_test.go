package readiness

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
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
