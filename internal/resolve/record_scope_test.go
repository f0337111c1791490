package resolve

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// RecordScope records status.content and, for an instance, says what its
// content's scope means: namespaced only in the Resolved condition, or a
// terminal stop when it is cluster-scoped and another installation of
// the extension runs another version.
func TestRecordScope(t *testing.T) {
	crd := v1alpha1.ObjectReference{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}
	cm := v1alpha1.ObjectReference{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "config"}
	other := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "w"}}
	other.Spec.Extension = "widgets"
	other.Status.InstalledVersion = "1.0.0"
	for _, tc := range []struct {
		name     string
		instance string
		refs     []v1alpha1.ObjectReference
		others   []*v1alpha1.ExtensionInstallation
		stop     string // a part of the stop's message ("" none)
		resolved string // a part of the Resolved condition's message afterwards
	}{
		{name: "shared version", refs: []v1alpha1.ObjectReference{crd}, others: []*v1alpha1.ExtensionInstallation{other}, resolved: "chosen"},
		{name: "an instance, namespaced only", instance: "team-a/w", refs: []v1alpha1.ObjectReference{cm},
			resolved: "chosen; a version of its own, apart from the other installations of widgets: its content is namespaced only"},
		{name: "an instance, cluster-scoped, alone", instance: "team-a/w", refs: []v1alpha1.ObjectReference{crd}, resolved: "chosen"},
		{name: "an instance, cluster-scoped, another version runs", instance: "team-a/w", refs: []v1alpha1.ObjectReference{crd, cm},
			others: []*v1alpha1.ExtensionInstallation{other}, stop: "team-b/w runs 1.0.0", resolved: "team-b/w runs 1.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "w", Generation: 3}}
			inst.Spec.Extension = "widgets"
			meta.SetStatusCondition(&inst.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionResolved, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, Message: "chosen"})
			choice := Selection{Extension: "widgets", Version: v1alpha1.ExtensionVersion{Version: "2.0.0"}, Instance: tc.instance}
			stop := RecordScope(inst, choice, tc.refs, append([]*v1alpha1.ExtensionInstallation{inst}, tc.others...), &Resolution{})
			if c := inst.Status.Content; c == nil || c.Version != "2.0.0" || c.ObservedGeneration != 3 || (c.ClusterScoped != nil) != (tc.refs[0] == crd) {
				t.Fatalf("status.content %+v", c)
			}
			switch {
			case tc.stop == "" && stop != nil, tc.stop != "" && (stop == nil || !strings.Contains(stop.Message, tc.stop) || stop.Reason != v1alpha1.ReasonNoMatchingVersion):
				t.Fatalf("stop %+v, want one containing %q", stop, tc.stop)
			}
			if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionResolved); !strings.Contains(c.Message, tc.resolved) {
				t.Errorf("Resolved: %q, want %q in it", c.Message, tc.resolved)
			}
		})
	}
}

// Choose takes the installation's selection and says so in its Resolved
// condition, or stops one the resolution could not satisfy.
func TestChoose(t *testing.T) {
	sel := Selection{Extension: "widgets", Version: v1alpha1.ExtensionVersion{Version: "2.0.0"}}
	for _, tc := range []struct {
		name       string
		resolution *Resolution
		installed  string
		stop       string // the stop's message ("" none)
		err        bool
		resolved   metav1.ConditionStatus
	}{
		{name: "chosen", resolution: &Resolution{Selected: map[string]Selection{"widgets": sel}}, resolved: metav1.ConditionTrue},
		{name: "unsatisfiable", resolution: &Resolution{Failed: map[string]*Explanation{"team-a/w": {Reason: v1alpha1.ReasonNoMatchingVersion, Message: "no version fits."}}},
			stop: "no version fits.", resolved: metav1.ConditionFalse},
		{name: "unsatisfiable, installed", installed: "1.0.0",
			resolution: &Resolution{Failed: map[string]*Explanation{"team-a/w": {Reason: v1alpha1.ReasonNoMatchingVersion, Message: "no version fits."}}},
			stop:       "no version fits. widgets 1.0.0 keeps running as it is.", resolved: metav1.ConditionFalse},
		{name: "no answer", resolution: &Resolution{}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "w"}}
			inst.Spec.Extension = "widgets"
			inst.Status.InstalledVersion = tc.installed
			got, stop, err := Choose(inst, tc.resolution)
			if (err != nil) != tc.err {
				t.Fatalf("error %v", err)
			}
			if msg := ""; stop != nil || tc.stop != "" {
				if stop != nil {
					msg = stop.Message
				}
				if msg != tc.stop {
					t.Fatalf("stop %+v, want %q", stop, tc.stop)
				}
			}
			c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionResolved)
			switch {
			case tc.resolved == "" && c != nil, tc.resolved != "" && (c == nil || c.Status != tc.resolved):
				t.Fatalf("Resolved %+v, want %s", c, tc.resolved)
			case tc.resolved == metav1.ConditionTrue && (got.Version.Version != "2.0.0" || inst.Status.ResolvedVersion != "2.0.0"):
				t.Fatalf("chose %s, status.resolvedVersion %s", got.Version.Version, inst.Status.ResolvedVersion)
			}
		})
	}
}
