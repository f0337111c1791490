package target

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
)

func TestDrifted(t *testing.T) {
	deploy := v1alpha1.ObjectReference{Kind: "Deployment", Namespace: "web", Name: "web"}
	role := v1alpha1.ObjectReference{Kind: "ClusterRole", Name: "web"}
	for _, tc := range []struct {
		name   string
		drifts []Drift
		want   []v1alpha1.DriftedObject
	}{
		// Nothing drifted is an empty list.
		{name: "none", want: []v1alpha1.DriftedObject{}},
		// A changed object lists the fields that differ.
		{name: "changed", drifts: []Drift{{Object: deploy, Fields: []string{"spec.replicas", "spec.template.spec.containers[web].image"}}},
			want: []v1alpha1.DriftedObject{{ObjectReference: deploy, Fields: []string{"spec.replicas", "spec.template.spec.containers[web].image"}}}},
		// A deleted object says so, whatever fields the diff listed.
		{name: "deleted", drifts: []Drift{{Object: role, Missing: true, Fields: []string{"rules"}}},
			want: []v1alpha1.DriftedObject{{ObjectReference: role, Fields: []string{"deleted"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Drifted(tc.drifts); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("Drifted() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDescribeDrift(t *testing.T) {
	many := make([]v1alpha1.DriftedObject, 7)
	for i := range many {
		many[i] = v1alpha1.DriftedObject{ObjectReference: v1alpha1.ObjectReference{Kind: "ConfigMap", Namespace: "web", Name: fmt.Sprint("cm", i)}, Fields: []string{"data"}}
	}
	for _, tc := range []struct {
		name string
		objs []v1alpha1.DriftedObject
		want string
	}{
		// A namespaced object is named namespace/name, a cluster-scoped
		// one by its name; each with its fields.
		{name: "both scopes", objs: []v1alpha1.DriftedObject{
			{ObjectReference: v1alpha1.ObjectReference{Kind: "Deployment", Namespace: "web", Name: "web"}, Fields: []string{"spec.replicas", "metadata.labels"}},
			{ObjectReference: v1alpha1.ObjectReference{Kind: "ClusterRole", Name: "web"}, Fields: []string{"deleted"}},
		}, want: "Deployment web/web (spec.replicas, metadata.labels); ClusterRole web (deleted)"},
		// Past five objects, the rest are counted.
		{name: "many", objs: many,
			want: "ConfigMap web/cm0 (data); ConfigMap web/cm1 (data); ConfigMap web/cm2 (data); ConfigMap web/cm3 (data); ConfigMap web/cm4 (data); and 2 more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DescribeDrift(tc.objs); got != tc.want {
				t.Errorf("DescribeDrift() = %q, want %q", got, tc.want)
			}
		})
	}
}

// driftWorld answers a drift check from its fields and records what the
// check did.
type driftWorld struct {
	drifts              []Drift
	diffErr, correctErr error
	seen                []string
	events              []string
	corrected           bool
}

func (w *driftWorld) Diff(Set) ([]Drift, Health, error) { return w.drifts, Health{Total: 1}, w.diffErr }
func (w *driftWorld) Correct(Set) (Applied, error) {
	w.corrected = true
	return Applied{Health: Health{Total: 2}}, w.correctErr
}
func (w *driftWorld) Seen(h *Health) {
	if h == nil {
		w.seen = append(w.seen, "none")
		return
	}
	w.seen = append(w.seen, fmt.Sprint(h.Total))
}
func (w *driftWorld) Refused(err error) *news.Stop {
	return &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonApplyFailed, Message: err.Error()}
}
func (w *driftWorld) Event(eventType, reason, message string) {
	w.events = append(w.events, eventType+" "+reason+": "+message)
}

func TestCheckDrift(t *testing.T) {
	cm := Drift{Object: v1alpha1.ObjectReference{Version: "v1", Kind: "ConfigMap", Namespace: "team", Name: "cm"}, Fields: []string{"data.a"}}
	for _, tc := range []struct {
		name     string
		mode     v1alpha1.DriftDetectionMode
		notReady bool
		world    driftWorld
		before   bool // status.drifted already lists cm
		want     DriftOutcome
		stop     string // the stop's message ("" none)
		seen     string
		events   int
		drifted  bool // status.drifted lists cm afterwards
		correct  bool // Correct was asked
	}{
		{name: "disabled clears status.drifted", mode: v1alpha1.DriftDetectionDisabled, before: true},
		{name: "not Ready yet: nothing read", notReady: true, before: true, drifted: true},
		{name: "nothing drifted", before: true, seen: "1"},
		{name: "the cluster cannot be compared", world: driftWorld{diffErr: errors.New("down")},
			stop: "comparing the cluster with revision 4: down"},
		{name: "warn lists and tells", mode: v1alpha1.DriftDetectionWarn, world: driftWorld{drifts: []Drift{cm}}, seen: "1", events: 1, drifted: true},
		{name: "warn tells once", mode: v1alpha1.DriftDetectionWarn, world: driftWorld{drifts: []Drift{cm}}, before: true, seen: "1", drifted: true},
		{name: "corrected", world: driftWorld{drifts: []Drift{cm}}, want: DriftOutcome{Corrected: true}, seen: "1 2", events: 1, correct: true},
		{name: "the correction fails", world: driftWorld{drifts: []Drift{cm}, correctErr: errors.New("conflict")},
			stop: "correcting drift: conflict", seen: "1 none", drifted: true, correct: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{}
			inst.Spec.DriftDetection = tc.mode
			inst.Status.History = []v1alpha1.Revision{{Number: 4}}
			if tc.before {
				inst.Status.Drifted = Drifted([]Drift{cm})
			}
			w := tc.world
			out := CheckDrift(inst, !tc.notReady, Set{}, &w)
			if msg := ""; out.Stop != nil || tc.stop != "" {
				if out.Stop != nil {
					msg = out.Stop.Message
				}
				if msg != tc.stop {
					t.Fatalf("stop %+v, want %q", out.Stop, tc.stop)
				}
			}
			if out.Corrected != tc.want.Corrected || w.corrected != tc.correct || strings.Join(w.seen, " ") != tc.seen || len(w.events) != tc.events {
				t.Errorf("outcome %+v, corrected %v, seen %q, events %q", out, w.corrected, w.seen, w.events)
			}
			if (len(inst.Status.Drifted) > 0) != tc.drifted {
				t.Errorf("status.drifted %+v, want listed %v", inst.Status.Drifted, tc.drifted)
			}
		})
	}
}
