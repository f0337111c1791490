package remediate

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/target"
)

// world is a Port over records in memory that logs what it is asked.
type world struct {
	records  map[int64]bool
	applyErr error
	left     int // objects a Delete leaves
	did      []string
}

func (w *world) Recorded(n int64) (target.Set, bool, error) { return target.Set{}, w.records[n], nil }
func (w *world) Restore(rev v1alpha1.Revision, _ target.Set) (error, error) {
	w.did = append(w.did, "restore "+rev.Version)
	return w.applyErr, nil
}
func (w *world) Delete(refs []v1alpha1.ObjectReference) (int, error) {
	w.did = append(w.did, "delete")
	return w.left, nil
}
func (w *world) Event(_, reason, _ string) { w.did = append(w.did, "event "+reason) }

// upgraded is an installation whose revision 2 (1.0.0) was healthy and
// whose upgrade to 2.0.0 fails, with failures already counted.
func upgraded(failures int32) *v1alpha1.ExtensionInstallation {
	inst := &v1alpha1.ExtensionInstallation{Spec: v1alpha1.ExtensionInstallationSpec{Extension: "app"}}
	inst.Status.Failures, inst.Status.LastHealthyRevision, inst.Status.InstalledVersion = failures, 2, "1.0.0"
	inst.Status.History = []v1alpha1.Revision{{Number: 2, Version: "1.0.0"}, {Number: 1, Version: "0.9.0"}}
	inst.Status.Inventory = []v1alpha1.ObjectReference{{Kind: "ConfigMap", Name: "a"}}
	return inst
}

func TestFailed(t *testing.T) {
	a := Attempt{Version: "2.0.0", Reason: "HealthTimeout", Message: "Deployment app is not ready"}
	firstInstall := func(remediation string) *v1alpha1.ExtensionInstallation {
		inst := &v1alpha1.ExtensionInstallation{Spec: v1alpha1.ExtensionInstallationSpec{Extension: "app"}}
		inst.Spec.Install.Remediation = remediation
		inst.Status.Inventory = []v1alpha1.ObjectReference{{Kind: "ConfigMap", Name: "a"}}
		return inst
	}
	for _, tc := range []struct {
		name     string
		inst     *v1alpha1.ExtensionInstallation
		world    world
		want     news.Kind
		reason   string
		poll     bool
		did      string
		contains string
	}{
		{name: "retries left", inst: upgraded(0), want: news.Wait, reason: v1alpha1.ReasonRetrying, poll: true,
			did: "event HealthTimeout", contains: "attempt 1 of 3 at app 2.0.0 failed: Deployment app is not ready; trying again"},
		{name: "rolled back", inst: upgraded(2), world: world{records: map[int64]bool{2: true}}, want: news.Terminal, reason: v1alpha1.ReasonRolledBack,
			did: "restore 1.0.0, event RolledBack", contains: "upgrade to app 2.0.0 failed after 3 attempts (Deployment app is not ready); rolled back to app 1.0.0 (revision 2, now revision 3)"},
		{name: "record gone", inst: upgraded(2), want: news.Terminal, reason: v1alpha1.ReasonRetrying,
			contains: "the record of revision 2 is gone, so Annex cannot roll back"},
		{name: "rollback apply fails", inst: upgraded(2), world: world{records: map[int64]bool{2: true}, applyErr: errors.New("refused")},
			want: news.Retry, reason: v1alpha1.ReasonApplyFailed, did: "restore 1.0.0", contains: "rolling back to revision 2: refused"},
		{name: "first install kept", inst: firstInstall(""), want: news.Terminal, reason: v1alpha1.ReasonInstallFailed,
			did: "event InstallFailed", contains: "left as it is for inspection"},
		{name: "first install uninstalled", inst: firstInstall("Uninstall"), want: news.Terminal, reason: v1alpha1.ReasonInstallFailed,
			did: "event InstallFailed, delete", contains: "uninstalled what was applied"},
		{name: "first install uninstalling", inst: firstInstall("Uninstall"), world: world{left: 1}, want: news.Wait, reason: v1alpha1.ReasonUninstalling, poll: true,
			did: "event InstallFailed, delete", contains: "removing what was applied (1 objects left)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Failed(tc.inst, a, metav1.Now(), &tc.world)
			if err != nil || out.Stop == nil {
				t.Fatalf("Failed: %+v, %v", out, err)
			}
			if out.Stop.Kind != tc.want || out.Stop.Reason != tc.reason || out.Poll != tc.poll || !strings.Contains(out.Stop.Message, tc.contains) {
				t.Errorf("stop %+v poll %v, want kind %d reason %s poll %v, a message with %q", *out.Stop, out.Poll, tc.want, tc.reason, tc.poll, tc.contains)
			}
			if did := strings.Join(tc.world.did, ", "); did != tc.did {
				t.Errorf("did %q, want %q", did, tc.did)
			}
			if out.Stop.Kind == news.Terminal && (tc.inst.Status.FailedTarget == nil || tc.inst.Status.Failures != 0) {
				t.Errorf("a remediated failure holds its target: failedTarget %+v, failures %d", tc.inst.Status.FailedTarget, tc.inst.Status.Failures)
			}
		})
	}
	// What a failed first install applied is gone once Delete leaves nothing.
	inst := firstInstall("Uninstall")
	if _, err := Failed(inst, a, metav1.Now(), &world{}); err != nil || len(inst.Status.Inventory) != 0 ||
		!meta.IsStatusConditionFalse(inst.Status.Conditions, v1alpha1.ConditionInstalled) {
		t.Errorf("after the uninstall: inventory %v, conditions %+v (err %v)", inst.Status.Inventory, inst.Status.Conditions, err)
	}
}
