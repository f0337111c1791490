package cli

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Views of a large fleet, shared by annexctl status and the console's
// clusters and installations pages: the status tree narrowed by a cluster
// label selector and state, what needs a person first, counts per
// Kubernetes version and shard, and pages. Every function here takes
// values and returns values; the tree comes from Status's three LISTs.

// DefaultShard is the shard of a ManagedCluster without the
// v1alpha1.LabelShard label.
const DefaultShard = "default"

// ClusterState is what a cluster needs: nothing, a look at its
// installations, or a look at the cluster itself. Every cluster is in
// exactly one state.
type ClusterState string

const (
	// ClusterReady: reachable, and every installation on it is Ready.
	ClusterReady ClusterState = "ready"
	// ClusterNotReady: reachable, with an installation that is not Ready.
	ClusterNotReady ClusterState = "notready"
	// ClusterUnreachable: a ManagedCluster whose Reachable condition is
	// not True (the manager has not reached it yet, or cannot), a cluster
	// that installations name but no ManagedCluster is, or the hub when
	// the console cannot read its version.
	ClusterUnreachable ClusterState = "unreachable"
)

// ClusterStates are the states in the order views list them: what needs
// a person first.
var ClusterStates = []ClusterState{ClusterUnreachable, ClusterNotReady, ClusterReady}

// State is the cluster's state. The hub counts as reachable unless its
// Reachable is False (annexctl leaves it Unknown: Annex runs there).
func (cs ClusterStatus) State() ClusterState {
	switch {
	case cs.Reachable == metav1.ConditionFalse, !cs.Hub && cs.Reachable != metav1.ConditionTrue:
		return ClusterUnreachable
	case cs.Ready < cs.Total:
		return ClusterNotReady
	}
	return ClusterReady
}

// ShardName is the cluster's shard (its Shard, else its
// v1alpha1.LabelShard label), DefaultShard when it has none; "" for the
// hub, which is no ManagedCluster.
func (cs ClusterStatus) ShardName() string {
	if cs.Hub {
		return ""
	}
	if cs.Shard != "" {
		return cs.Shard
	}
	if s := cs.Labels[v1alpha1.LabelShard]; s != "" {
		return s
	}
	return DefaultShard
}

// ParseClusterStates reads states separated by commas ("" is none, which
// keeps every state). The error lists the states there are.
func ParseClusterStates(s string) ([]ClusterState, error) {
	var out []ClusterState
	for field := range strings.SplitSeq(s, ",") {
		field = strings.ToLower(strings.TrimSpace(field))
		if field == "" {
			continue
		}
		st := ClusterState(field)
		if !slices.Contains(ClusterStates, st) {
			return nil, fmt.Errorf("%q is not a cluster state; use %s, or several separated by commas", field, stateList())
		}
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out, nil
}

func stateList() string {
	names := make([]string, len(ClusterStates))
	for i, s := range ClusterStates {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// ParseSelector reads a label selector as kubectl -l takes it
// (env=prod,tier!=web,zone in (a,b),!legacy); "" selects everything. The
// error says what is wrong and shows the syntax.
func ParseSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a label selector (%v); write it as kubectl -l takes it, e.g. env=prod,tier!=web,zone in (eu,us)", s, err)
	}
	return sel, nil
}

// FleetQuery narrows a status tree. The zero value keeps everything.
type FleetQuery struct {
	// Selector picks clusters by their ManagedCluster labels; nil picks
	// every cluster. The hub has no labels: it matches only selectors
	// that an empty label set matches (tier!=web, !legacy).
	Selector labels.Selector
	// States keeps the clusters in one of these states; empty keeps every
	// state.
	States []ClusterState
	// NotReady keeps the clusters that are not ready and, on them, the
	// installations that are not Ready.
	NotReady bool
	// Match keeps the installations whose namespace/name or extension
	// contains it, ignoring case.
	Match string
}

// FleetSummary counts the clusters a selector picked (before the state
// filter and before paging), as views show it above their list.
type FleetSummary struct {
	Clusters    int `json:"clusters"`
	Ready       int `json:"ready"`
	NotReady    int `json:"notReady"`
	Unreachable int `json:"unreachable"`
	// Installations on those clusters, and how many are not Ready.
	Installations         int `json:"installations"`
	InstallationsNotReady int `json:"installationsNotReady"`
	// KubernetesVersions counts the clusters per version their API
	// server reports, oldest first; "" (not known yet) last.
	KubernetesVersions []ClusterCount `json:"kubernetesVersions"`
	// Shards counts the ManagedClusters per shard (v1alpha1.LabelShard,
	// DefaultShard without it), by name; the hub is in none.
	Shards []ClusterCount `json:"shards"`
}

// ClusterCount is how many clusters share a Kubernetes version or a
// shard.
type ClusterCount struct {
	Name     string `json:"name"`
	Clusters int    `json:"clusters"`
}

// SummarizeFleet counts clusters by state, Kubernetes version and shard,
// and their installations.
func SummarizeFleet(clusters []ClusterStatus) FleetSummary {
	s := FleetSummary{Clusters: len(clusters), KubernetesVersions: []ClusterCount{}, Shards: []ClusterCount{}}
	versions, shards := map[string]int{}, map[string]int{}
	for _, cs := range clusters {
		switch cs.State() {
		case ClusterReady:
			s.Ready++
		case ClusterNotReady:
			s.NotReady++
		case ClusterUnreachable:
			s.Unreachable++
		}
		s.Installations += cs.Total
		s.InstallationsNotReady += cs.Total - cs.Ready
		versions[cs.KubernetesVersion]++
		if !cs.Hub {
			shards[cs.ShardName()]++
		}
	}
	for v, n := range versions {
		s.KubernetesVersions = append(s.KubernetesVersions, ClusterCount{Name: v, Clusters: n})
	}
	slices.SortFunc(s.KubernetesVersions, func(a, b ClusterCount) int { return compareVersions(a.Name, b.Name) })
	for name, n := range shards {
		s.Shards = append(s.Shards, ClusterCount{Name: name, Clusters: n})
	}
	slices.SortFunc(s.Shards, func(a, b ClusterCount) int { return strings.Compare(a.Name, b.Name) })
	return s
}

// compareVersions orders Kubernetes versions oldest first (1.9 before
// 1.10), "" last, and what does not parse after the versions that do,
// by text.
func compareVersions(a, b string) int {
	if (a == "") != (b == "") {
		if a == "" {
			return 1
		}
		return -1
	}
	va, errA := version.ParseGeneric(a)
	vb, errB := version.ParseGeneric(b)
	switch {
	case errA == nil && errB == nil:
		if va.LessThan(vb) {
			return -1
		}
		if vb.LessThan(va) {
			return 1
		}
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// NarrowFleet returns the clusters of tree that q picks, with Summary
// counting those q.Selector picks: unreachable clusters first, then the
// ones with installations that are not Ready, then the ready ones (each
// group in tree's order: the hub, then by name); on each cluster the
// installations that are not Ready first. A cluster that q.Match or
// q.NotReady leaves without installations stays listed, with its counts;
// Total and Ready count the installations listed. tree is not changed.
func NarrowFleet(tree *StatusTree, q FleetQuery) *StatusTree {
	picked := make([]ClusterStatus, 0, len(tree.Clusters))
	for _, cs := range tree.Clusters {
		if q.Selector == nil || q.Selector.Matches(labels.Set(cs.Labels)) {
			picked = append(picked, cs)
		}
	}
	summary := SummarizeFleet(picked)
	out := &StatusTree{Clusters: make([]ClusterStatus, 0, len(picked)), Summary: &summary}
	match := strings.ToLower(strings.TrimSpace(q.Match))
	for _, cs := range picked {
		st := cs.State()
		if len(q.States) > 0 && !slices.Contains(q.States, st) {
			continue
		}
		if q.NotReady && st == ClusterReady {
			continue
		}
		kept := make([]InstallationStatus, 0, len(cs.Installations))
		for _, in := range cs.Installations {
			if q.NotReady && in.Ready == metav1.ConditionTrue {
				continue
			}
			if match != "" && !strings.Contains(strings.ToLower(in.Namespace+"/"+in.Name+" "+in.Extension), match) {
				continue
			}
			kept = append(kept, in)
		}
		slices.SortStableFunc(kept, func(a, b InstallationStatus) int {
			return cmp.Compare(readyRank(a.Ready), readyRank(b.Ready))
		})
		cs.Installations = kept
		out.Clusters = append(out.Clusters, cs)
	}
	slices.SortStableFunc(out.Clusters, func(a, b ClusterStatus) int {
		return cmp.Compare(slices.Index(ClusterStates, a.State()), slices.Index(ClusterStates, b.State()))
	})
	out.recount()
	return out
}

// readyRank puts installations that are not Ready before Ready ones.
func readyRank(s metav1.ConditionStatus) int {
	if s == metav1.ConditionTrue {
		return 1
	}
	return 0
}

// recount sets Total and Ready to the installations listed.
func (t *StatusTree) recount() {
	t.Total, t.Ready = 0, 0
	for _, cs := range t.Clusters {
		for _, in := range cs.Installations {
			t.Total++
			if in.Ready == metav1.ConditionTrue {
				t.Ready++
			}
		}
	}
}

// LimitClusters returns tree with its first n clusters (every cluster
// when n <= 0), Unlisted counting the others and Total and Ready the
// installations still listed. tree is not changed.
func LimitClusters(tree *StatusTree, n int) *StatusTree {
	out := *tree
	if n <= 0 || n >= len(tree.Clusters) {
		return &out
	}
	out.Clusters = tree.Clusters[:n:n]
	out.Unlisted = tree.Unlisted + len(tree.Clusters) - n
	out.recount()
	return &out
}

// Page is one page of a list: the items [Start, End) of Items.
type Page struct {
	// Number counts from 1; Pages is at least 1.
	Number, Pages int
	// Size is the most items a page holds.
	Size       int
	Items      int
	Start, End int
}

// PageOf is page number of items in pages of size (every item on one
// page when size <= 0). A number below 1 is the first page, one past the
// last page the last.
func PageOf(items, number, size int) Page {
	p := Page{Pages: 1, Size: size, Items: items, End: items}
	if size > 0 && items > size {
		p.Pages = (items + size - 1) / size
	}
	p.Number = min(max(number, 1), p.Pages)
	if size > 0 {
		p.Start = min((p.Number-1)*size, items)
		p.End = min(p.Start+size, items)
	}
	return p
}

// First is the 1-based position of the page's first item, 0 when the
// page is empty.
func (p Page) First() int {
	if p.End == p.Start {
		return 0
	}
	return p.Start + 1
}

// Prev and Next are the numbers of the pages around p, 0 when there is
// none.
func (p Page) Prev() int {
	if p.Number > 1 {
		return p.Number - 1
	}
	return 0
}

func (p Page) Next() int {
	if p.Number < p.Pages {
		return p.Number + 1
	}
	return 0
}

// CountInstallations is how many installations clusters list.
func CountInstallations(clusters []ClusterStatus) int {
	n := 0
	for _, cs := range clusters {
		n += len(cs.Installations)
	}
	return n
}

// PageInstallations returns the clusters that hold the installations
// [p.Start, p.End) of clusters, counted in order, each cluster with
// those of its installations only; a cluster split between pages is on
// both. Clusters without installations are left out.
func PageInstallations(clusters []ClusterStatus, p Page) []ClusterStatus {
	out := []ClusterStatus{}
	at := 0
	for _, cs := range clusters {
		n := len(cs.Installations)
		from, to := max(p.Start-at, 0), min(p.End-at, n)
		at += n
		if from >= to {
			continue
		}
		cs.Installations = cs.Installations[from:to:to]
		out = append(out, cs)
	}
	return out
}
