package profile

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func profileOf(name string, priority int32, mode v1alpha1.ProfileMode, exts ...string) v1alpha1.ExtensionProfile {
	p := v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ExtensionProfileSpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
		Priority:        priority,
	}}
	for _, e := range exts {
		p.Spec.Extensions = append(p.Spec.Extensions, v1alpha1.ProfileExtension{Name: e, Version: "1.x", Mode: mode})
	}
	return p
}

func inst(name, profile, cluster, ext string) v1alpha1.ExtensionInstallation {
	i := v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec: v1alpha1.ExtensionInstallationSpec{Extension: ext, Version: "1.x", Cluster: cluster}}
	if profile != "" {
		i.Labels[v1alpha1.LabelProfile] = profile
		i.Labels[v1alpha1.LabelProfileCluster] = cluster
		i.Labels[v1alpha1.LabelProfileRevision] = "1"
	}
	return i
}

// allAtOnce is the view of the default rollout of p's first revision:
// every cluster moved to it at once.
func allAtOnce(p *v1alpha1.ExtensionProfile, clusters []cluster) revisionView {
	v := revisionView{data: map[int64]*v1alpha1.ProfileRevisionData{1: wantedRevision(p, nil)}, moves: map[string]int64{}}
	for _, c := range clusters {
		v.moves[c.name] = 1
	}
	return v
}

// kinds summarises a decision's actions as "kind:name".
func kinds(decided decision) []string {
	var out []string
	for _, a := range decided.actions {
		switch a.kind {
		case actRecordRevision:
			out = append(out, fmt.Sprintf("revision:%s@%d", clusterLabel(a.want.cluster), a.record.Revision))
			continue
		case actDropRecord:
			out = append(out, "drop:"+clusterLabel(a.want.cluster))
			continue
		}
		out = append(out, []string{"create", "update", "remove", "record"}[a.kind]+":"+a.name)
	}
	return out
}

func TestDecide(t *testing.T) {
	prod := cluster{name: "edge", labels: map[string]string{"env": "prod"}}
	dev := cluster{name: "lab", labels: map[string]string{"env": "dev"}}
	recordedDev := dev
	recordedDev.record, recordedDev.hasRecord = clusterRecord{Revision: 1, Move: 1}, true
	recorded := cluster{name: "edge", labels: map[string]string{"env": "prod"}, defaults: map[string][]string{"base": {"hello"}}}
	base := profileOf("base", 0, v1alpha1.ProfileModeDefault, "hello")
	enforced := profileOf("base", 0, v1alpha1.ProfileModeEnforced, "hello")
	edited := inst("hello-edge", "base", "edge", "hello")
	edited.Spec.Version = "2.x"
	twoEnforced := profileOf("base", 0, v1alpha1.ProfileModeEnforced, "hello", "world")
	moved := cluster{name: "edge", labels: map[string]string{"env": "prod"}, revision: 1}
	twoBumped := twoEnforced.DeepCopy()
	twoBumped.Spec.Extensions[0].Version = "2.x"
	enforcedInst := func(name, ext string) v1alpha1.ExtensionInstallation {
		i := inst(name, "base", "edge", ext)
		i.Spec.Upgrade.AllowDowngrade = true // as an Enforced profile writes it
		return i
	}
	bumped := revisionView{data: map[int64]*v1alpha1.ProfileRevisionData{1: wantedRevision(&twoEnforced, nil), 2: wantedRevision(twoBumped, nil)},
		moves: map[string]int64{"edge": 2}}
	unmoved := bumped
	unmoved.moves = nil
	helloOnly := profileOf("base", 0, v1alpha1.ProfileModeEnforced, "hello")
	dropped := revisionView{data: map[int64]*v1alpha1.ProfileRevisionData{1: wantedRevision(&twoEnforced, nil), 3: wantedRevision(&helloOnly, nil)},
		moves: map[string]int64{"edge": 3}}
	toNothing := revisionView{data: map[int64]*v1alpha1.ProfileRevisionData{1: wantedRevision(&twoEnforced, nil)},
		moves: map[string]int64{"edge": 0}}
	// The cache behind this manager's own writes: the cluster runs
	// revision 1 (its record, remembered), and the installations the
	// reconcile before wrote are not listed yet, or listed as they were.
	atOne := cluster{name: "edge", labels: map[string]string{"env": "prod"}, revision: 1}
	behind := func(p *v1alpha1.ExtensionProfile) *revisionView {
		return &revisionView{data: map[int64]*v1alpha1.ProfileRevisionData{1: wantedRevision(p, nil)},
			unseen: map[string]bool{"hello-edge": true, "hello-lab": true}}
	}
	movedBehind := behind(&enforced)
	movedBehind.moves = map[string]int64{"edge": 1}
	for _, tc := range []struct {
		name     string
		p        v1alpha1.ExtensionProfile
		others   []v1alpha1.ExtensionProfile
		clusters []cluster
		existing []v1alpha1.ExtensionInstallation
		// view is the rollout's; unset: allAtOnce.
		view      *revisionView
		want      []string
		conflicts int
	}{
		// A matching cluster gets a Default installation, recorded once.
		{name: "default created", p: base, clusters: []cluster{prod, dev}, want: []string{"create:hello-edge", "record:hello-edge", "revision:edge@1"}},
		// A Default its owners deleted stays deleted.
		{name: "default deleted by owner", p: base, clusters: []cluster{recorded}, want: nil},
		// A Default its owners edited stays edited.
		{name: "default edited", p: base, clusters: []cluster{recorded}, existing: []v1alpha1.ExtensionInstallation{edited}, want: []string{"revision:edge@1"}},
		// Enforced: a deleted installation is created again, an edit reverted.
		{name: "enforced deleted", p: enforced, clusters: []cluster{recorded}, want: []string{"create:hello-edge", "revision:edge@1"}},
		{name: "enforced edited", p: enforced, clusters: []cluster{recorded}, existing: []v1alpha1.ExtensionInstallation{edited}, want: []string{"update:hello-edge", "revision:edge@1"}},
		// A cluster that stops matching loses the profile's installation;
		// another installation in the namespace is none of its business.
		{name: "cluster stops matching", p: base, clusters: []cluster{dev},
			existing: []v1alpha1.ExtensionInstallation{inst("hello-lab", "base", "lab", "hello"), inst("mine", "", "lab", "hello")},
			want:     []string{"remove:hello-lab"}},
		// Its record goes once its installations are gone, not before.
		{name: "cluster gone from the profile", p: base, clusters: []cluster{recordedDev},
			existing: []v1alpha1.ExtensionInstallation{inst("hello-lab", "base", "lab", "hello")},
			want:     []string{"remove:hello-lab"}},
		{name: "cluster gone from the profile, installations gone", p: base, clusters: []cluster{recordedDev},
			want: []string{"drop:lab"}},
		// Two profiles offer hello to edge: the higher priority wins and
		// takes the installation over; the other reports a conflict and
		// removes nothing.
		{name: "conflict lost", p: base, others: []v1alpha1.ExtensionProfile{profileOf("strict", 10, v1alpha1.ProfileModeEnforced, "hello")},
			clusters: []cluster{recorded}, existing: []v1alpha1.ExtensionInstallation{inst("hello-edge", "base", "edge", "hello")},
			want: []string{"revision:edge@1"}, conflicts: 1},
		{name: "conflict won", p: profileOf("strict", 10, v1alpha1.ProfileModeDefault, "hello"), others: []v1alpha1.ExtensionProfile{base},
			clusters: []cluster{recorded}, existing: []v1alpha1.ExtensionInstallation{inst("hello-edge", "base", "edge", "hello")},
			want: []string{"update:hello-edge", "revision:edge@1"}},
		// A revision that changes one Enforced extension: the cluster
		// moved to it has that installation updated, the other left as it
		// is (its spec is already the revision's), then its record
		// written.
		{name: "enforced moved", p: twoEnforced, clusters: []cluster{moved},
			existing: []v1alpha1.ExtensionInstallation{enforcedInst("hello-edge", "hello"), enforcedInst("world-edge", "world")},
			view:     &bumped, want: []string{"update:hello-edge", "revision:edge@2"}},
		// Not moved: nothing is written, record or not.
		{name: "enforced unmoved", p: twoEnforced, clusters: []cluster{moved},
			existing: []v1alpha1.ExtensionInstallation{enforcedInst("hello-edge", "hello"), enforcedInst("world-edge", "world")},
			view:     &unmoved, want: nil},
		// A revision that drops an extension: its installation is removed
		// before the record is written.
		{name: "extension dropped", p: twoEnforced, clusters: []cluster{moved},
			existing: []v1alpha1.ExtensionInstallation{enforcedInst("hello-edge", "hello"), enforcedInst("world-edge", "world")},
			view:     &dropped, want: []string{"remove:world-edge", "revision:edge@3"}},
		// Moved to no revision (a first rollout rolled back): everything
		// goes, and no record is written.
		{name: "moved to nothing", p: twoEnforced, clusters: []cluster{moved},
			existing: []v1alpha1.ExtensionInstallation{enforcedInst("hello-edge", "hello")},
			view:     &toNothing, want: []string{"remove:hello-edge"}},
		// Created a moment ago and not in the cache yet: not created again
		// (AlreadyExists), Default or Enforced; a cluster moved meanwhile
		// still gets its record, as it holds the installation. Deleted
		// and still listed: not deleted again. An update is: the cache's
		// object may be older than the write, and the update is retried
		// on the newer one.
		{name: "enforced created, cache behind", p: enforced, clusters: []cluster{atOne}, view: behind(&enforced), want: nil},
		{name: "default created, cache behind", p: base, clusters: []cluster{atOne}, view: behind(&base), want: nil},
		{name: "created, cache behind, moved", p: enforced, clusters: []cluster{atOne}, view: movedBehind, want: []string{"revision:edge@1"}},
		{name: "removed, cache behind", p: base, clusters: []cluster{dev},
			existing: []v1alpha1.ExtensionInstallation{inst("hello-lab", "base", "lab", "hello")}, view: behind(&base), want: nil},
		{name: "enforced updated, cache behind", p: enforced, clusters: []cluster{atOne},
			existing: []v1alpha1.ExtensionInstallation{edited}, view: behind(&enforced), want: []string{"update:hello-edge"}},
		// The same cluster with the cache caught up on nothing unseen:
		// the missing installation is created (an Enforced one someone
		// deleted).
		{name: "enforced missing, cache caught up", p: enforced, clusters: []cluster{atOne},
			view: &revisionView{data: map[int64]*v1alpha1.ProfileRevisionData{1: wantedRevision(&enforced, nil)}}, want: []string{"create:hello-edge"}},
		// Equal priority: the first name wins, whichever is reconciled.
		{name: "tie", p: profileOf("zeta", 0, v1alpha1.ProfileModeDefault, "hello"), others: []v1alpha1.ExtensionProfile{profileOf("alpha", 0, v1alpha1.ProfileModeDefault, "hello")},
			clusters: []cluster{prod}, want: nil, conflicts: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := append([]v1alpha1.ExtensionProfile{tc.p}, tc.others...)
			view := allAtOnce(&tc.p, tc.clusters)
			if tc.view != nil {
				view = *tc.view
			}
			decided := decide(&tc.p, all, tc.clusters, tc.existing, view)
			got := kinds(decided)
			if len(got) != len(tc.want) {
				t.Fatalf("actions %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("actions %v, want %v", got, tc.want)
				}
			}
			if len(decided.conflicts) != tc.conflicts {
				t.Errorf("conflicts %v, want %d", decided.conflicts, tc.conflicts)
			}
		})
	}
}

// A cluster whose Kubernetes version cannot run a revision's target gets
// the highest version of the range that fits it, and the decision says so;
// a cluster that can run it gets the target, and one the catalog has
// nothing for gets the target (its installation says why).
func TestDecideHeldBackByKubernetesVersion(t *testing.T) {
	catalog := map[string]*v1alpha1.Extension{"hello": {ObjectMeta: metav1.ObjectMeta{Name: "hello"}, Spec: v1alpha1.ExtensionSpec{
		Versions: []v1alpha1.ExtensionVersion{
			{Version: "1.0.0", KubeVersion: ">=1.30.0-0"},
			{Version: "1.1.0", KubeVersion: ">=1.36.0-0"},
			{Version: "1.2.0", KubeVersion: ">=1.37.0-0"},
		}}}}
	p := profileOf("base", 0, v1alpha1.ProfileModeEnforced, "hello")
	var clusters []cluster
	for name, kube := range map[string]string{"new": "1.37.1", "old": "1.36.4", "ancient": "1.29.0", "unknown": ""} {
		clusters = append(clusters, cluster{name: name, labels: map[string]string{"env": "prod"}, version: kube})
	}
	slices.SortFunc(clusters, func(a, b cluster) int { return strings.Compare(a.name, b.name) })
	view := revisionView{data: map[int64]*v1alpha1.ProfileRevisionData{1: wantedRevision(&p, catalog)}, catalog: catalog,
		moves: map[string]int64{}, newest: 1, memo: versionMemo{}}
	for _, c := range clusters {
		view.moves[c.name] = 1
	}
	if got := view.data[1].Extensions[0].Target; got != "1.2.0" {
		t.Fatalf("the revision's target is %q, want 1.2.0", got)
	}
	decided := decide(&p, []v1alpha1.ExtensionProfile{p}, clusters, nil, view)
	versions := map[string]string{}
	for _, a := range decided.actions {
		if a.kind == actCreate {
			versions[a.want.cluster] = a.want.ext.Version
		}
	}
	want := map[string]string{"new": "1.2.0", "old": "1.1.0", "ancient": "1.2.0", "unknown": "1.2.0"}
	if !maps.Equal(versions, want) {
		t.Errorf("versions by cluster %v, want %v", versions, want)
	}
	n, named := heldBack(decided.heldBack)
	if n != 1 || len(named) != 1 || named[0].Cluster != "old" || named[0].Reason != v1alpha1.ReasonKubernetesVersion ||
		named[0].Message != `hello 1.2.0 needs Kubernetes >=1.37.0-0 and the cluster runs 1.36.4: it gets 1.1.0, the highest version within "1.x" that fits` {
		t.Errorf("held back: %d %+v", n, named)
	}

	// Held back on an older revision than the one rolled out: not named.
	view.newest = 2
	if decided := decide(&p, []v1alpha1.ExtensionProfile{p}, clusters, nil, view); len(decided.heldBack) != 0 {
		t.Errorf("held back from an older revision: %+v", decided.heldBack)
	}
}

// heldBack names a cluster once, however many of its installations are
// held back, and at most rollout.MaxNamed.
func TestHeldBackBounded(t *testing.T) {
	var held []v1alpha1.RolloutClusterState
	for i := range 30 {
		for _, ext := range []string{"a", "b"} {
			held = append(held, v1alpha1.RolloutClusterState{Cluster: fmt.Sprintf("c-%02d", 29-i), Extension: ext})
		}
	}
	n, named := heldBack(held)
	if n != 30 || len(named) != 10 || named[0].Cluster != "c-00" || named[9].Cluster != "c-09" {
		t.Errorf("heldBack = %d, %+v", n, named)
	}
	if n, named := heldBack(nil); n != 0 || named != nil {
		t.Errorf("heldBack(nil) = %d, %+v", n, named)
	}
}
