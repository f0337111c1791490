package uninstall

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/target"
)

// world is a Port that keeps a log of what the uninstall asked, in
// order, and answers as its fields say.
type world struct {
	log          []string
	gateHolds    bool
	cleanupHolds bool
	hookErr      error         // of the pre-delete hooks
	deleteErr    error         // of every Delete
	forbidden    bool          // deleteErr is the ServiceAccount refused
	remaining    int           // what every Delete leaves
	health       target.Health // what every Health read says
	finalizerErr error         // of RemoveFinalizers
}

func (w *world) Gate() (bool, error) { w.log = append(w.log, "gate"); return !w.gateHolds, nil }
func (w *world) Cleanup() (bool, error) {
	w.log = append(w.log, "cleanup")
	return !w.cleanupHolds, nil
}
func (w *world) RunDeleteHooks(post bool) error {
	if post {
		w.log = append(w.log, "post-delete hooks")
		return nil
	}
	w.log = append(w.log, "pre-delete hooks")
	return w.hookErr
}
func (w *world) Delete(refs []v1alpha1.ObjectReference) (int, error) {
	w.log = append(w.log, "delete "+names(refs))
	return w.remaining, w.deleteErr
}
func (w *world) Forbidden(err error) *news.Stop {
	if !w.forbidden {
		return nil
	}
	return &news.Stop{Kind: news.Retry, Reason: "Forbidden", Message: err.Error()}
}
func (w *world) Health(refs []v1alpha1.ObjectReference) (target.Health, error) {
	w.log = append(w.log, "health "+names(refs))
	return w.health, nil
}
func (w *world) RemoveFinalizers(refs []v1alpha1.ObjectReference) error {
	w.log = append(w.log, "remove finalizers "+names(refs))
	return w.finalizerErr
}
func (w *world) DeleteRecords() error   { w.log = append(w.log, "delete records"); return nil }
func (w *world) Release() (bool, error) { w.log = append(w.log, "release"); return true, nil }
func (w *world) Event(eventType, reason, _ string) {
	w.log = append(w.log, fmt.Sprintf("event %s %s", eventType, reason))
}

func names(refs []v1alpha1.ObjectReference) string {
	var n []string
	for _, r := range refs {
		n = append(n, r.Kind+"/"+r.Name)
	}
	return strings.Join(n, ",")
}

func TestRun(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ns := v1alpha1.ObjectReference{Version: "v1", Kind: "Namespace", Name: "apps"}
	cm := v1alpha1.ObjectReference{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "cfg"}
	widget := v1alpha1.ObjectReference{Group: "example.com", Version: "v1", Kind: "Widget", Namespace: "apps", Name: "w"}
	postHook := &unstructured.Unstructured{}
	postHook.SetAnnotations(map[string]string{"helm.sh/hook": "post-delete"})
	withHooks := target.Set{Objects: []*unstructured.Unstructured{postHook}}
	started := []metav1.Condition{{Type: v1alpha1.ConditionInstalled, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUninstalling}}
	terminating := target.Health{NotReady: []target.ObjectHealth{{Object: widget, Status: "Terminating", Message: "finalizers: example.com/cleanup"}}}
	for _, tc := range []struct {
		name       string
		world      world
		installed  target.Set
		noRecord   bool
		started    bool
		onTimeout  string
		late       bool // the pass comes after spec.uninstall.timeout
		want       []string
		done       bool
		stop       *news.Stop
		polls      int
		uninstalls bool // the Installed condition says Uninstalling after the pass
	}{
		// The whole order in one pass: the target namespace waits for the
		// post-delete hooks, which run in it; told by Uninstalled alone.
		{name: "all in one pass", installed: withHooks,
			want: []string{"gate", "cleanup", "pre-delete hooks", "delete ConfigMap/cfg", "health Namespace/apps",
				"post-delete hooks", "delete Namespace/apps", "delete records", "event Normal Uninstalled", "release"},
			done: true, uninstalls: true},
		// Without post-delete hooks the namespace goes with the rest.
		{name: "no post-delete hooks",
			want: []string{"gate", "cleanup", "pre-delete hooks", "delete Namespace/apps,ConfigMap/cfg", "post-delete hooks",
				"delete records", "event Normal Uninstalled", "release"},
			done: true, uninstalls: true},
		// A PreUninstall hook that holds the uninstall: nothing else runs,
		// nothing is told, and the port said why.
		{name: "gate holds", world: world{gateHolds: true}, want: []string{"gate"}},
		// The cleanup plan holds it likewise.
		{name: "cleanup holds", world: world{cleanupHolds: true}, want: []string{"gate", "cleanup"}},
		// A failed pre-delete hook is retried, before anything is deleted.
		{name: "pre-delete hook fails", world: world{hookErr: errors.New("job failed")},
			want: []string{"gate", "cleanup", "pre-delete hooks"},
			stop: &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonHookFailed, Message: "pre-delete hook of podinfo: job failed"}},
		// No record: no hook and no cleanup plan, only the inventory.
		{name: "no record", noRecord: true, installed: withHooks,
			want: []string{"delete Namespace/apps,ConfigMap/cfg", "delete records", "event Normal Uninstalled", "release"},
			done: true, uninstalls: true},
		// An uninstall that began deleting in an earlier pass resumes
		// there: no gate, cleanup or pre-delete hook again, and no
		// Uninstalling Event again while it waits.
		{name: "resumes", started: true, world: world{remaining: 1},
			want: []string{"delete Namespace/apps,ConfigMap/cfg"},
			stop: &news.Stop{Kind: news.Wait, Reason: v1alpha1.ReasonUninstalling, Message: "waiting for 1 of 2 objects to be deleted"}, polls: 1, uninstalls: true},
		// The first pass that waits for deletion tells it began.
		{name: "waits", world: world{remaining: 2},
			want: []string{"gate", "cleanup", "pre-delete hooks", "delete Namespace/apps,ConfigMap/cfg", "event Normal Uninstalling"},
			stop: &news.Stop{Kind: news.Wait, Reason: v1alpha1.ReasonUninstalling, Message: "waiting for 2 of 2 objects to be deleted"}, polls: 1, uninstalls: true},
		// The held namespace already going says the post-delete hooks ran.
		{name: "post-delete hooks ran", started: true, installed: withHooks,
			world: world{health: target.Health{NotReady: []target.ObjectHealth{{Object: ns, Status: "Terminating"}}}},
			want:  []string{"delete ConfigMap/cfg", "health Namespace/apps", "delete Namespace/apps", "delete records", "event Normal Uninstalled", "release"},
			done:  true, uninstalls: true},
		// The target cluster refusing the ServiceAccount is its stop, shown
		// in the Installed condition.
		{name: "forbidden", started: true, world: world{deleteErr: errors.New("forbidden"), forbidden: true},
			want: []string{"delete Namespace/apps,ConfigMap/cfg"},
			stop: &news.Stop{Kind: news.Retry, Reason: "Forbidden", Message: "forbidden"}, polls: 30},
		// Any other error deleting is retried.
		{name: "delete fails", started: true, world: world{deleteErr: errors.New("boom")},
			want: []string{"delete Namespace/apps,ConfigMap/cfg"},
			stop: &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonUninstallFailed, Message: "removing the objects of podinfo: boom"}, uninstalls: true},
		// Past the timeout, with onTimeout RemoveFinalizers, the lingering
		// objects lose their finalizers, told by a Warning.
		{name: "past timeout, remove finalizers", started: true, late: true, onTimeout: v1alpha1.UninstallRemoveFinalizers,
			world: world{remaining: 1, health: terminating},
			want:  []string{"delete Namespace/apps,ConfigMap/cfg", "health Namespace/apps,ConfigMap/cfg", "remove finalizers Widget/w", "event Warning FinalizersRemoved"},
			stop:  &news.Stop{Kind: news.Wait, Reason: v1alpha1.ReasonUninstalling, Message: "waiting for 1 of 2 objects to be deleted"}, polls: 1, uninstalls: true},
		// Past the timeout otherwise, the uninstall is Stalled.
		{name: "past timeout, stalled", started: true, late: true, world: world{remaining: 1, health: terminating},
			want: []string{"delete Namespace/apps,ConfigMap/cfg", "health Namespace/apps,ConfigMap/cfg"},
			stop: &news.Stop{Kind: news.Stalled, Reason: v1alpha1.ReasonFinalizersPending}, polls: 5, uninstalls: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{}
			inst.DeletionTimestamp = &deleted
			inst.Spec.Extension, inst.Status.InstalledVersion = "podinfo", "1.0.0"
			inst.Spec.Uninstall.OnTimeout = tc.onTimeout
			inst.Status.Inventory = []v1alpha1.ObjectReference{ns, cm}
			if tc.started {
				inst.Status.Conditions = slices.Clone(started)
			}
			now := deleted.Add(time.Minute)
			if tc.late {
				now = deleted.Add(time.Hour)
			}
			w := tc.world
			h, err := Run(Input{Inst: inst, Installed: tc.installed, HaveRecord: !tc.noRecord, Namespace: "apps", Now: now}, &w)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(w.log, tc.want) {
				t.Errorf("asked\n  %s\nwant\n  %s", strings.Join(w.log, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if h.Done != tc.done || h.Polls != tc.polls {
				t.Errorf("Halt = %+v, want done %v, polls %d", h, tc.done, tc.polls)
			}
			switch {
			case (h.Stop == nil) != (tc.stop == nil):
				t.Errorf("stop = %+v, want %+v", h.Stop, tc.stop)
			case h.Stop != nil && (h.Stop.Kind != tc.stop.Kind || h.Stop.Reason != tc.stop.Reason ||
				tc.stop.Message != "" && h.Stop.Message != tc.stop.Message):
				t.Errorf("stop = %+v, want %+v", *h.Stop, *tc.stop)
			}
			c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionInstalled)
			if got := c != nil && c.Reason == v1alpha1.ReasonUninstalling; got != tc.uninstalls {
				t.Errorf("Installed condition %+v; want Uninstalling: %v", c, tc.uninstalls)
			}
			if tc.name == "forbidden" && (c == nil || c.Reason != "Forbidden") {
				t.Errorf("Installed condition %+v; want the refusal", c)
			}
		})
	}
}
