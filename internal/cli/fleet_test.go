package cli_test

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
)

// fleet1000 is a fleet of 1,000 ManagedClusters c0000…c0999, one
// installation each:
//   - env=prod on even clusters, env=dev on odd ones;
//   - shard by i%4: none (default), eu, us, ap;
//   - Kubernetes 1.33.4, 1.34.1, 1.35.0 by i%3;
//   - every 50th (i%50==0) never reached yet: Reachable absent, version
//     not known; every 100th from 99 (i%100==99) unreachable: 30 in all;
//   - the installation of every 7th (i%7==0) not Ready: 143.
//
// The counts the tests expect follow from these rules.
func fleet1000() *cli.StatusTree {
	var clusters []v1alpha1.ManagedCluster
	var insts []v1alpha1.ExtensionInstallation
	for i := range 1000 {
		name := fmt.Sprintf("c%04d", i)
		mc := v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"env": "dev"}}}
		if i%2 == 0 {
			mc.Labels["env"] = "prod"
		}
		if shard := []string{"", "eu", "us", "ap"}[i%4]; shard != "" {
			mc.Labels[v1alpha1.LabelShard] = shard
		}
		switch {
		case i%50 == 0:
		case i%100 == 99:
			mc.Status.KubernetesVersion = []string{"1.33.4", "1.34.1", "1.35.0"}[i%3]
			mc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReachable, Status: metav1.ConditionFalse, Message: "connection refused"}}
		default:
			mc.Status.KubernetesVersion = []string{"1.33.4", "1.34.1", "1.35.0"}[i%3]
			mc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReachable, Status: metav1.ConditionTrue}}
		}
		clusters = append(clusters, mc)
		ready := metav1.ConditionTrue
		if i%7 == 0 {
			ready = metav1.ConditionFalse
		}
		insts = append(insts, v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app-" + name},
			Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "app", Cluster: name},
			Status:     v1alpha1.ExtensionInstallationStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: ready}}},
		})
	}
	return cli.BuildStatus(clusters, insts, nil, cli.StatusFilter{})
}

func mustSelector(t *testing.T, s string) cli.FleetQuery {
	t.Helper()
	sel, err := cli.ParseSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return cli.FleetQuery{Selector: sel}
}

func clusterNames(cs []cli.ClusterStatus) []string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return names
}

func TestNarrowFleet1000(t *testing.T) {
	tree := fleet1000()
	versions := func(v33, v34, v35, unknown int) []cli.ClusterCount {
		out := []cli.ClusterCount{{"1.33.4", v33}, {"1.34.1", v34}, {"1.35.0", v35}}
		if unknown > 0 {
			out = append(out, cli.ClusterCount{Name: "", Clusters: unknown})
		}
		return out
	}
	withStates := func(q cli.FleetQuery, states ...cli.ClusterState) cli.FleetQuery {
		q.States = states
		return q
	}
	for _, tc := range []struct {
		name    string
		query   cli.FleetQuery
		summary cli.FleetSummary
		// listed clusters, the first few of them, installations listed
		// and how many of those are Ready.
		listed       int
		first        []string
		total, ready int
	}{
		// Everything: unreachable clusters first (never reached and
		// refused, by name), then the ones with an installation not
		// Ready, then the ready ones.
		{name: "every cluster", query: cli.FleetQuery{},
			summary: cli.FleetSummary{Clusters: 1000, Ready: 831, NotReady: 139, Unreachable: 30, Installations: 1000, InstallationsNotReady: 143,
				KubernetesVersions: versions(327, 327, 326, 20),
				Shards:             []cli.ClusterCount{{"ap", 250}, {"default", 250}, {"eu", 250}, {"us", 250}}},
			listed: 1000, first: []string{"c0000", "c0050", "c0099"}, total: 1000, ready: 857},
		// A selector narrows the summary too.
		{name: "env=prod", query: mustSelector(t, "env=prod"),
			summary: cli.FleetSummary{Clusters: 500, Ready: 411, NotReady: 69, Unreachable: 20, Installations: 500, InstallationsNotReady: 72,
				KubernetesVersions: versions(160, 160, 160, 20),
				Shards:             []cli.ClusterCount{{"default", 250}, {"us", 250}}},
			listed: 500, first: []string{"c0000", "c0050", "c0100"}, total: 500, ready: 428},
		// One shard by its label.
		{name: "shard eu", query: mustSelector(t, v1alpha1.LabelShard+"=eu"),
			summary: cli.FleetSummary{Clusters: 250, Ready: 215, NotReady: 35, Installations: 250, InstallationsNotReady: 35,
				KubernetesVersions: versions(83, 84, 83, 0), Shards: []cli.ClusterCount{{"eu", 250}}},
			listed: 250, first: []string{"c0021", "c0049", "c0077"}, total: 250, ready: 215},
		// The default shard is the clusters without the label.
		{name: "default shard", query: mustSelector(t, "!"+v1alpha1.LabelShard),
			summary: cli.FleetSummary{Clusters: 250, Ready: 206, NotReady: 34, Unreachable: 10, Installations: 250, InstallationsNotReady: 36,
				KubernetesVersions: versions(80, 80, 80, 10), Shards: []cli.ClusterCount{{"default", 250}}},
			listed: 250, first: []string{"c0000", "c0100", "c0200"}, total: 250, ready: 214},
		// A state keeps the summary of every cluster the selector picks.
		{name: "state notready", query: withStates(cli.FleetQuery{}, cli.ClusterNotReady),
			summary: cli.FleetSummary{Clusters: 1000, Ready: 831, NotReady: 139, Unreachable: 30, Installations: 1000, InstallationsNotReady: 143,
				KubernetesVersions: versions(327, 327, 326, 20),
				Shards:             []cli.ClusterCount{{"ap", 250}, {"default", 250}, {"eu", 250}, {"us", 250}}},
			listed: 139, first: []string{"c0007", "c0014", "c0021"}, total: 139, ready: 0},
		// Two states, with a selector.
		{name: "env=prod, unreachable or notready", query: withStates(mustSelector(t, "env=prod"), cli.ClusterUnreachable, cli.ClusterNotReady),
			summary: cli.FleetSummary{Clusters: 500, Ready: 411, NotReady: 69, Unreachable: 20, Installations: 500, InstallationsNotReady: 72,
				KubernetesVersions: versions(160, 160, 160, 20),
				Shards:             []cli.ClusterCount{{"default", 250}, {"us", 250}}},
			listed: 89, first: []string{"c0000", "c0050", "c0100"}, total: 89, ready: 17},
		// --not-ready: the clusters that are not ready, and on them the
		// installations that are not Ready only.
		{name: "not ready", query: cli.FleetQuery{NotReady: true},
			summary: cli.FleetSummary{Clusters: 1000, Ready: 831, NotReady: 139, Unreachable: 30, Installations: 1000, InstallationsNotReady: 143,
				KubernetesVersions: versions(327, 327, 326, 20),
				Shards:             []cli.ClusterCount{{"ap", 250}, {"default", 250}, {"eu", 250}, {"us", 250}}},
			listed: 169, first: []string{"c0000", "c0050", "c0099"}, total: 143, ready: 0},
		// A selector that matches nothing.
		{name: "no match", query: mustSelector(t, "env=staging"),
			summary: cli.FleetSummary{KubernetesVersions: []cli.ClusterCount{}, Shards: []cli.ClusterCount{}},
			listed:  0, first: []string{}, total: 0, ready: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cli.NarrowFleet(tree, tc.query)
			if got.Summary == nil {
				t.Fatal("no summary")
			}
			if fmt.Sprint(*got.Summary) != fmt.Sprint(tc.summary) {
				t.Errorf("summary\n%+v\nwant\n%+v", *got.Summary, tc.summary)
			}
			names := clusterNames(got.Clusters)
			if len(names) != tc.listed || !slices.Equal(names[:min(len(names), len(tc.first))], tc.first) {
				t.Errorf("listed %d clusters starting %v, want %d starting %v", len(names), names[:min(len(names), 3)], tc.listed, tc.first)
			}
			if got.Total != tc.total || got.Ready != tc.ready {
				t.Errorf("installations listed %d, Ready %d; want %d, %d", got.Total, got.Ready, tc.total, tc.ready)
			}
			// Not ready first: no cluster comes after one in a later state.
			for i := 1; i < len(got.Clusters); i++ {
				a, b := got.Clusters[i-1], got.Clusters[i]
				if slices.Index(cli.ClusterStates, a.State()) > slices.Index(cli.ClusterStates, b.State()) {
					t.Fatalf("%s (%s) listed before %s (%s)", a.Name, a.State(), b.Name, b.State())
				}
			}
		})
	}
	if len(tree.Clusters) != 1000 || tree.Clusters[0].Name != "c0000" || tree.Clusters[1].Name != "c0001" || tree.Summary != nil {
		t.Error("NarrowFleet changed the tree it was given")
	}
}

// Paging the 1,000 clusters, 100 a page.
func TestLimitAndPage1000(t *testing.T) {
	tree := cli.NarrowFleet(fleet1000(), cli.FleetQuery{})
	limited := cli.LimitClusters(tree, 100)
	// The first 100: 30 unreachable and 70 not ready clusters, whose 26
	// installations on unreachable clusters are Ready.
	if len(limited.Clusters) != 100 || limited.Unlisted != 900 || limited.Total != 100 || limited.Ready != 26 {
		t.Errorf("limit 100: %d clusters, %d unlisted, %d installations, %d Ready; want 100, 900, 100, 26",
			len(limited.Clusters), limited.Unlisted, limited.Total, limited.Ready)
	}
	if limited.Summary.Clusters != 1000 || len(tree.Clusters) != 1000 {
		t.Errorf("limit 100 changed the summary (%d clusters) or the tree (%d)", limited.Summary.Clusters, len(tree.Clusters))
	}
	if all := cli.LimitClusters(tree, 0); len(all.Clusters) != 1000 || all.Unlisted != 0 {
		t.Errorf("limit 0: %d clusters, %d unlisted; want every one", len(all.Clusters), all.Unlisted)
	}
	p := cli.PageOf(len(tree.Clusters), 10, 100)
	if got := clusterNames(tree.Clusters[p.Start:p.End]); len(got) != 100 || got[99] != "c0998" {
		t.Errorf("page 10: %d clusters ending %v, want 100 ending c0998 (c0999 is unreachable, on page 1)", len(got), got[len(got)-1:])
	}
}

func TestPageOf(t *testing.T) {
	for _, tc := range []struct {
		items, number, size int
		want                cli.Page
		first, prev, next   int
	}{
		// The first of ten pages.
		{1000, 1, 100, cli.Page{Number: 1, Pages: 10, Size: 100, Items: 1000, Start: 0, End: 100}, 1, 0, 2},
		// The last page.
		{1000, 10, 100, cli.Page{Number: 10, Pages: 10, Size: 100, Items: 1000, Start: 900, End: 1000}, 901, 9, 0},
		// Past the last page: the last page.
		{1000, 11, 100, cli.Page{Number: 10, Pages: 10, Size: 100, Items: 1000, Start: 900, End: 1000}, 901, 9, 0},
		// Below the first: the first.
		{1000, 0, 100, cli.Page{Number: 1, Pages: 10, Size: 100, Items: 1000, Start: 0, End: 100}, 1, 0, 2},
		// A last page of one item.
		{101, 2, 100, cli.Page{Number: 2, Pages: 2, Size: 100, Items: 101, Start: 100, End: 101}, 101, 1, 0},
		// Nothing to list: one empty page.
		{0, 3, 100, cli.Page{Number: 1, Pages: 1, Size: 100, Items: 0, Start: 0, End: 0}, 0, 0, 0},
		// No size: every item on one page.
		{1000, 2, 0, cli.Page{Number: 1, Pages: 1, Size: 0, Items: 1000, Start: 0, End: 1000}, 1, 0, 0},
	} {
		got := cli.PageOf(tc.items, tc.number, tc.size)
		if got != tc.want || got.First() != tc.first || got.Prev() != tc.prev || got.Next() != tc.next {
			t.Errorf("PageOf(%d, %d, %d) = %+v (first %d, prev %d, next %d), want %+v (%d, %d, %d)",
				tc.items, tc.number, tc.size, got, got.First(), got.Prev(), got.Next(), tc.want, tc.first, tc.prev, tc.next)
		}
	}
}

// Installations are paged across clusters: a cluster split between two
// pages is on both, with its part of the installations.
func TestPageInstallations(t *testing.T) {
	inst := func(names ...string) []cli.InstallationStatus {
		out := []cli.InstallationStatus{}
		for _, n := range names {
			out = append(out, cli.InstallationStatus{Namespace: "ns", Name: n})
		}
		return out
	}
	clusters := []cli.ClusterStatus{
		{Name: "a", Installations: inst("a1", "a2")},
		{Name: "empty", Installations: inst()},
		{Name: "b", Installations: inst("b1", "b2", "b3")},
		{Name: "c", Installations: inst("c1")},
	}
	show := func(cs []cli.ClusterStatus) string {
		s := ""
		for _, c := range cs {
			s += c.Name + ":"
			for _, in := range c.Installations {
				s += in.Name + " "
			}
		}
		return s
	}
	for _, tc := range []struct {
		number int
		want   string
	}{
		{1, "a:a1 a2 "},
		{2, "b:b1 b2 "},
		{3, "b:b3 c:c1 "},
	} {
		p := cli.PageOf(cli.CountInstallations(clusters), tc.number, 2)
		if got := show(cli.PageInstallations(clusters, p)); got != tc.want {
			t.Errorf("page %d: %q, want %q", tc.number, got, tc.want)
		}
	}
	if got := show(clusters); got != "a:a1 a2 empty:b:b1 b2 b3 c:c1 " {
		t.Errorf("PageInstallations changed its input: %q", got)
	}
}

func TestClusterStateAndShard(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cs    cli.ClusterStatus
		state cli.ClusterState
		shard string
	}{
		// annexctl leaves the hub's Reachable Unknown: Annex runs there.
		{"hub", cli.ClusterStatus{Hub: true, Reachable: metav1.ConditionUnknown, Total: 2, Ready: 2}, cli.ClusterReady, ""},
		// The console could not read the hub's version.
		{"hub unreachable", cli.ClusterStatus{Hub: true, Reachable: metav1.ConditionFalse}, cli.ClusterUnreachable, ""},
		// A ManagedCluster not reached yet.
		{"new cluster", cli.ClusterStatus{Reachable: metav1.ConditionUnknown}, cli.ClusterUnreachable, cli.DefaultShard},
		// Unreachable wins over installations not Ready.
		{"unreachable", cli.ClusterStatus{Reachable: metav1.ConditionFalse, Total: 2, Ready: 1}, cli.ClusterUnreachable, cli.DefaultShard},
		{"not ready", cli.ClusterStatus{Reachable: metav1.ConditionTrue, Total: 2, Ready: 1,
			Labels: map[string]string{v1alpha1.LabelShard: "eu"}}, cli.ClusterNotReady, "eu"},
		// No installations: ready.
		{"empty", cli.ClusterStatus{Reachable: metav1.ConditionTrue}, cli.ClusterReady, cli.DefaultShard},
	} {
		if got := tc.cs.State(); got != tc.state {
			t.Errorf("%s: state %s, want %s", tc.name, got, tc.state)
		}
		if got := tc.cs.ShardName(); got != tc.shard {
			t.Errorf("%s: shard %q, want %q", tc.name, got, tc.shard)
		}
	}
}

func TestParseClusterStates(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []cli.ClusterState
		err  string
	}{
		{"", nil, ""},
		{"ready", []cli.ClusterState{cli.ClusterReady}, ""},
		// Several, in any case, each once.
		{" NotReady,unreachable,notready", []cli.ClusterState{cli.ClusterNotReady, cli.ClusterUnreachable}, ""},
		{"broken", nil, `"broken" is not a cluster state; use unreachable, notready, ready, or several separated by commas`},
	} {
		got, err := cli.ParseClusterStates(tc.in)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("ParseClusterStates(%q) = %v, %q; want %v, %q", tc.in, got, msg, tc.want, tc.err)
		}
	}
	if _, err := cli.ParseSelector("env in prod"); err == nil {
		t.Error(`ParseSelector("env in prod"): no error`)
	}
}

// Kubernetes versions are counted oldest first by version, not by text;
// a version not known yet comes last.
func TestSummaryVersionOrder(t *testing.T) {
	var cs []cli.ClusterStatus
	for _, v := range []string{"1.10.0", "", "1.9.3", "1.10.0", "weird"} {
		cs = append(cs, cli.ClusterStatus{KubernetesVersion: v, Reachable: metav1.ConditionTrue})
	}
	got := cli.SummarizeFleet(cs).KubernetesVersions
	want := []cli.ClusterCount{{"1.9.3", 1}, {"1.10.0", 2}, {"weird", 1}, {"", 1}}
	if !slices.Equal(got, want) {
		t.Errorf("versions %v, want %v", got, want)
	}
}
