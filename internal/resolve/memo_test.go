package resolve

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// memoUniverse is a catalog of five extensions with dependencies among
// them, some versions for newer clusters only.
func memoUniverse() Universe {
	return Universe{
		"a": {ev("1.0.0", ""), ev("1.1.0", ""), ev("2.0.0", ">=1.30.0-0")},
		"b": {ev("1.0.0", "", "a ^1"), ev("1.2.0", "", "a >=1.1"), ev("2.0.0", "", "a ^2")},
		"c": {ev("0.9.0", ""), ev("1.0.0", "", "b *")},
		"d": {ev("3.0.0", "", "c ^1"), ev("3.1.0", "<1.30")},
		"e": {ev("1.0.0", ""), ev("1.0.1", "")},
	}
}

// randomInstallation draws an installation of the memo universe: most
// ask for any version and share it, some are installed, a few have
// cluster-scoped content recorded, are pinned, or ask for an extension
// nobody offers.
func randomInstallation(r *rand.Rand, namespace, name string) *v1alpha1.ExtensionInstallation {
	exts := []string{"a", "a", "a", "b", "c", "d", "e", "e"}
	ranges := []string{"*", "*", "*", "", "^1", ">=1.1", "^2", "<2"}
	versions := []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0", "3.0.0"}
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1 + r.Int64N(3)},
		Spec: v1alpha1.ExtensionInstallationSpec{
			Extension: exts[r.IntN(len(exts))],
			Version:   ranges[r.IntN(len(ranges))],
			Cluster:   "c1",
		},
	}
	if r.IntN(40) == 0 {
		inst.Spec.Extension = "nope"
	}
	if r.IntN(3) == 0 {
		inst.Status.InstalledVersion = versions[r.IntN(len(versions))]
		off := r.IntN(2) == 0
		inst.Spec.Upgrade.Automatic = &off
		inst.Spec.Upgrade.AllowDowngrade = r.IntN(2) == 0
	}
	switch r.IntN(6) {
	case 0: // namespaced content for the current generation
		inst.Status.Content = &v1alpha1.ContentScope{Version: "1.0.0", ObservedGeneration: inst.Generation}
	case 1: // cluster-scoped content, maybe for an older generation
		inst.Status.Content = &v1alpha1.ContentScope{Version: "1.0.0", ObservedGeneration: inst.Generation - r.Int64N(2),
			ClusterScoped: &v1alpha1.ObjectReference{Kind: "CustomResourceDefinition", Name: "widgets.example.com"}}
	}
	return inst
}

// TestClusterMemoMatchesWholeClusterSolve drives a memo through random
// changes of a 1,000-installation cluster — installations created,
// deleted, changed, rewritten by the cache unchanged, a reconcile's own
// copy differing from the cache's, the cluster version, the catalog and
// the provided APIs changing — and checks after each that what it
// answers is what stating and solving the whole cluster answers: the
// problem, the extensions asked for, and the resolution.
func TestClusterMemoMatchesWholeClusterSolve(t *testing.T) {
	catalogs := []Universe{memoUniverse(), memoUniverse()}
	catalogs[1]["a"] = append(catalogs[1]["a"], ev("1.2.0", "")) // a catalog update: a new version of a
	for seed := range uint64(2) {
		r := rand.New(rand.NewPCG(seed, 24))
		var insts []*v1alpha1.ExtensionInstallation
		for i := range 1000 {
			insts = append(insts, randomInstallation(r, fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("inst-%04d", i)))
		}
		memo := &ClusterMemo{}
		clusterVersion, catalog := "v1.31.2", 0
		var provided map[string]string
		solves := 0
		next := 1000
		for step := range 50 {
			var fresh *v1alpha1.ExtensionInstallation
			change := "nothing"
			switch k := r.IntN(10); k {
			case 0:
				change = "an installation created"
				insts = append(insts, randomInstallation(r, "ns-new", fmt.Sprintf("inst-%04d", next)))
				next++
			case 1:
				change = "an installation deleted"
				i := r.IntN(len(insts))
				insts = slices.Delete(insts, i, i+1)
			case 2, 3:
				change = "an installation changed"
				i := r.IntN(len(insts))
				insts[i] = randomInstallation(r, insts[i].Namespace, insts[i].Name)
			case 4:
				change = "an installation rewritten as it was (a new cache object)"
				i := r.IntN(len(insts))
				insts[i] = insts[i].DeepCopy()
			case 5:
				change = "a reconcile's own copy, its status ahead of the cache"
				i := r.IntN(len(insts))
				fresh = insts[i].DeepCopy()
				fresh.Status.InstalledVersion = "1.1.0"
				fresh.Status.Content = nil
				insts = slices.Clone(insts)
				insts[i] = fresh
			case 6:
				change = "the cluster version"
				clusterVersion = []string{"v1.29.4", "v1.31.2"}[r.IntN(2)]
			case 7:
				change = "the catalog"
				catalog = 1 - catalog
			case 8:
				change = "the provided APIs"
				if provided == nil {
					provided = map[string]string{"example.com/v1/Widget": "a"}
				} else {
					provided = nil
				}
			}
			listed := slices.Clone(insts) // the cache lists in any order
			r.Shuffle(len(listed), func(i, j int) { listed[i], listed[j] = listed[j], listed[i] })
			ix := NewIndex(catalogs[catalog])
			name := fmt.Sprintf("seed %d step %d (%s)", seed, step, change)

			st := memo.Refresh(listed, fresh)
			want := ProblemFor(clusterVersion, insts)
			want.Provided = provided
			if got := st.Problem(clusterVersion, provided); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: the memo states the cluster otherwise than ProblemFor", name)
			}
			asked := map[string]bool{}
			for _, in := range insts {
				asked[in.Spec.Extension] = true
			}
			wantAsked := make([]string, 0, len(asked))
			for ext := range asked {
				wantAsked = append(wantAsked, ext)
			}
			slices.Sort(wantAsked)
			if !slices.Equal(st.Asked(), wantAsked) {
				t.Fatalf("%s: asked %v, want %v", name, st.Asked(), wantAsked)
			}
			got := memo.Resolve(st, clusterVersion, fmt.Sprint(catalog), provided, func(p Problem) *Resolution {
				solves++
				return ix.SolveDistinct(p)
			})
			if whole := ix.SolveDistinct(want); !reflect.DeepEqual(got, whole) {
				t.Fatalf("%s: the memo's resolution differs from the whole cluster's solve", name)
			}
			// Asked again with nothing changed, the memo answers alone.
			before := solves
			again := memo.Resolve(memo.Refresh(listed, nil), clusterVersion, fmt.Sprint(catalog), provided, func(p Problem) *Resolution {
				solves++
				return ix.SolveDistinct(p)
			})
			if fresh == nil && (solves != before || again != got) {
				t.Fatalf("%s: asked again with nothing changed, the memo solved again", name)
			}
		}
	}
}

// TestClusterMemoReusesRows checks that a cluster whose installations did
// not change is not restated: the problem's rows are the ones of the last
// Refresh, not copies.
func TestClusterMemoReusesRows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var insts []*v1alpha1.ExtensionInstallation
	for i := range 1000 {
		insts = append(insts, randomInstallation(r, "ns", fmt.Sprintf("inst-%04d", i)))
	}
	memo := &ClusterMemo{}
	first := memo.Refresh(insts, nil)
	second := memo.Refresh(insts, nil)
	if &first.problem[0] != &second.problem[0] || first.epoch != second.epoch {
		t.Fatalf("the same installations were stated again")
	}
	insts[10] = insts[10].DeepCopy() // the same content, a new cache object
	if third := memo.Refresh(insts, nil); third.epoch != first.epoch {
		t.Fatalf("an installation rewritten unchanged moved the epoch")
	}
}

// BenchmarkClusterMemo measures what one reconcile's resolution costs on
// a cluster of 1,000 installations of one extension (the system
// benchmark's shape): stated and solved whole, as before ClusterMemo;
// through the memo with nothing changed since the last reconcile; and
// through the memo with one installation changed since (a new
// installed version), which restates the cluster and solves it.
func BenchmarkClusterMemo(b *testing.B) {
	ix := NewIndex(memoUniverse())
	insts := make([]*v1alpha1.ExtensionInstallation, 1000)
	for i := range insts {
		insts[i] = &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%04d", i), Name: "app", Generation: 1},
			Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "a", Version: "*"},
		}
	}
	solve := func(p Problem) *Resolution { return ix.SolveDistinct(p) }
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			ix.SolveDistinct(ProblemFor("v1.31.2", insts))
		}
	})
	b.Run("memo-unchanged", func(b *testing.B) {
		memo := &ClusterMemo{}
		for b.Loop() {
			memo.Resolve(memo.Refresh(insts, nil), "v1.31.2", "c", nil, solve)
		}
	})
	b.Run("memo-one-changed", func(b *testing.B) {
		memo := &ClusterMemo{}
		listed := slices.Clone(insts)
		i := 0
		for b.Loop() {
			changed := insts[i%len(insts)].DeepCopy()
			changed.Status.InstalledVersion = []string{"1.0.0", "1.1.0"}[i/len(insts)%2]
			listed[i%len(insts)] = changed
			i++
			memo.Resolve(memo.Refresh(listed, nil), "v1.31.2", "c", nil, solve)
		}
	})
}
