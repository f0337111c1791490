package rollout

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/annex-platform/annex/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// fleet makes n reachable clusters c000… at revision rev, Ready, in an
// open window.
func fleet(n int, rev int64) []Cluster {
	out := make([]Cluster, n)
	for i := range out {
		out[i] = Cluster{Name: fmt.Sprintf("c%03d", i), Reachable: true, Window: WindowState{Open: true},
			Revision: rev, Health: Ready, ChangedAt: t0.Add(-time.Hour), Labels: map[string]string{}}
	}
	return out
}

func canary() *v1alpha1.RolloutStrategy {
	one, ten := intstr.FromInt32(1), intstr.FromString("10%")
	return &v1alpha1.RolloutStrategy{Steps: []v1alpha1.RolloutStep{
		{Name: "canary", Clusters: &one},
		{Name: "ten", Clusters: &ten},
	}, OnFailure: v1alpha1.RolloutRollback}
}

// apply carries out moves on the clusters: they are at the target,
// Progressing, changed now.
func apply(cs []Cluster, moves []Move, now time.Time) {
	for _, m := range moves {
		for i := range cs {
			if cs[i].Name == m.Cluster {
				if cs[i].Revision != m.To {
					cs[i].Previous = cs[i].Revision
				}
				cs[i].Revision, cs[i].Health, cs[i].ChangedAt, cs[i].Partial, cs[i].Changed = m.To, Progressing, now, false, true
			}
		}
	}
}

func readyAll(cs []Cluster) {
	for i := range cs {
		if cs[i].Health == Progressing {
			cs[i].Health = Ready
		}
	}
}

func TestCanaryTenPercentRest(t *testing.T) {
	cs := fleet(100, 1)
	in := Input{Profile: "p", Now: t0, Strategy: canary(), Revision: 2, State: &v1alpha1.RolloutStatus{Revision: 1, Phase: v1alpha1.RolloutComplete, StableRevision: 1}}
	var order [][]string
	for range 10 {
		in.Clusters = cs
		pl := Decide(in)
		if pl.State.Phase == v1alpha1.RolloutComplete {
			if pl.State.Counts.Done != 100 {
				t.Fatalf("complete with %+v", pl.State.Counts)
			}
			if pl.State.StableRevision != 2 {
				t.Fatalf("stable revision %d", pl.State.StableRevision)
			}
			break
		}
		var wave []string
		for _, m := range pl.Moves {
			wave = append(wave, m.Cluster)
		}
		order = append(order, wave)
		apply(cs, pl.Moves, in.Now)
		readyAll(cs)
		in.State = &pl.State
		in.Now = in.Now.Add(time.Second)
	}
	// canary 1, then 10 % of the 99 left (10, rounded up), then the rest.
	if len(order) != 3 || len(order[0]) != 1 || len(order[1]) != 10 || len(order[2]) != 89 {
		t.Fatalf("waves of %v", lens(order))
	}
}

func lens(ws [][]string) []int {
	var out []int
	for _, w := range ws {
		out = append(out, len(w))
	}
	return out
}

func TestStepMembershipIsStableAcrossRevisions(t *testing.T) {
	cs := fleet(50, 1)
	a := Decide(Input{Now: t0, Strategy: canary(), Revision: 2, Clusters: cs})
	b := Decide(Input{Now: t0, Strategy: canary(), Revision: 7, Clusters: cs})
	if len(a.Moves) != 1 || a.Moves[0] != (Move{Cluster: b.Moves[0].Cluster, To: 2}) {
		t.Fatalf("canary %v then %v", a.Moves, b.Moves)
	}
}

func TestFailureBudget(t *testing.T) {
	two := intstr.FromInt32(2)
	s := &v1alpha1.RolloutStrategy{Steps: []v1alpha1.RolloutStep{{Name: "all", MaxUnavailable: &two}}, OnFailure: v1alpha1.RolloutPause}
	for _, tc := range []struct {
		failed int
		halted bool
	}{
		{failed: 2, halted: false}, // the budget allows two
		{failed: 3, halted: true},  // the third passes it
	} {
		cs := fleet(10, 2)
		for i := range tc.failed {
			cs[i].Health, cs[i].Reason = Failed, v1alpha1.ReasonHealthTimeout
		}
		pl := Decide(Input{Profile: "p", Now: t0, Strategy: s, Revision: 2, Clusters: cs,
			State: &v1alpha1.RolloutStatus{Revision: 2, Phase: v1alpha1.RolloutProgressing}})
		if got := pl.State.Phase == v1alpha1.RolloutHalted; got != tc.halted {
			t.Errorf("%d failed: phase %s, %s", tc.failed, pl.State.Phase, pl.State.Message)
		}
		if int(pl.State.Counts.Failed) != tc.failed || len(pl.State.Failures) != tc.failed {
			t.Errorf("%d failed: counts %+v, named %v", tc.failed, pl.State.Counts, pl.State.Failures)
		}
		if len(pl.Moves) != 0 {
			t.Errorf("%d failed: moves %v", tc.failed, pl.Moves)
		}
	}
}

func TestHaltRollsBackOnlyChangedClusters(t *testing.T) {
	cs := fleet(20, 1)
	in := Input{Profile: "p", Now: t0, Strategy: canary(), Revision: 2, Clusters: cs}
	pl := Decide(in)
	apply(cs, pl.Moves, t0)
	canaryName := pl.Moves[0].Cluster
	for i := range cs {
		if cs[i].Name == canaryName {
			cs[i].Health, cs[i].Reason = Failed, v1alpha1.ReasonRolledBack
		}
	}
	in.State, in.Now = &pl.State, t0.Add(time.Second)
	pl = Decide(in)
	if pl.State.Phase != v1alpha1.RolloutRollingBack || len(pl.Moves) != 1 || pl.Moves[0] != (Move{Cluster: canaryName, To: 1}) {
		t.Fatalf("phase %s, moves %v: %s", pl.State.Phase, pl.Moves, pl.State.Message)
	}
	apply(cs, pl.Moves, in.Now)
	readyAll(cs)
	in.State, in.Now = &pl.State, in.Now.Add(time.Second)
	pl = Decide(in)
	if pl.State.Phase != v1alpha1.RolloutRolledBack || len(pl.Moves) != 0 || pl.State.Counts.RolledBack != 1 || pl.State.Counts.Pending != 19 {
		t.Fatalf("phase %s, moves %v, counts %+v", pl.State.Phase, pl.Moves, pl.State.Counts)
	}
	// The halted revision stays halted.
	in.State = &pl.State
	if pl = Decide(in); len(pl.Moves) != 0 || pl.State.Phase != v1alpha1.RolloutRolledBack {
		t.Fatalf("again: phase %s, moves %v", pl.State.Phase, pl.Moves)
	}
}

func TestTimeoutFails(t *testing.T) {
	cs := fleet(3, 2)
	for i := range cs {
		cs[i].Changed = true // revision 2 wrote to them all
	}
	cs[0].Health, cs[0].ChangedAt, cs[0].Reason = Progressing, t0, v1alpha1.ReasonWaitingForHealth
	in := Input{Now: t0.Add(DefaultTimeout - time.Second), Strategy: canary(), Revision: 2, Clusters: cs,
		State: &v1alpha1.RolloutStatus{Revision: 2, Phase: v1alpha1.RolloutProgressing}}
	if pl := Decide(in); pl.State.Counts.InProgress != 1 || pl.RequeueAfter <= 0 || pl.RequeueAfter > 2*time.Second {
		t.Fatalf("before the timeout: %+v, requeue %s", pl.State.Counts, pl.RequeueAfter)
	}
	in.Now = t0.Add(DefaultTimeout + time.Second)
	pl := Decide(in)
	if pl.State.Phase != v1alpha1.RolloutRollingBack || !strings.Contains(pl.State.HaltReason, "timeout of 10m0s") ||
		len(pl.Moves) != 3 || pl.Moves[0].To != 0 { // all three run the halted revision
		t.Fatalf("after the timeout: %s (%s), moves %v", pl.State.Phase, pl.State.HaltReason, pl.Moves)
	}
}

func TestMaxConcurrentAndSoak(t *testing.T) {
	five := intstr.FromInt32(5)
	s := &v1alpha1.RolloutStrategy{MaxConcurrent: &five, Steps: []v1alpha1.RolloutStep{
		{Name: "first", Clusters: ptr(intstr.FromInt32(12)), SoakTime: &metav1.Duration{Duration: time.Minute}}}}
	cs := fleet(20, 1)
	in := Input{Now: t0, Strategy: s, Revision: 2, Clusters: cs}
	pl := Decide(in)
	if len(pl.Moves) != 5 {
		t.Fatalf("moves %d, want maxConcurrent 5", len(pl.Moves))
	}
	apply(cs, pl.Moves, t0)
	in.State = &pl.State
	if pl = Decide(in); len(pl.Moves) != 0 || pl.State.Counts.InProgress != 5 {
		t.Fatalf("none Ready yet: moves %d, counts %+v", len(pl.Moves), pl.State.Counts)
	}
	for range 3 {
		readyAll(cs)
		in.State = &pl.State
		pl = Decide(in)
		apply(cs, pl.Moves, in.Now)
	}
	readyAll(cs)
	in.State = &pl.State
	pl = Decide(in)
	if pl.State.Phase != v1alpha1.RolloutSoaking || len(pl.Moves) != 0 || pl.RequeueAfter != time.Minute {
		t.Fatalf("after step one: %s, moves %d, requeue %s", pl.State.Phase, len(pl.Moves), pl.RequeueAfter)
	}
	in.State, in.Now = &pl.State, t0.Add(time.Minute)
	if pl = Decide(in); pl.State.StepName != RestStep || len(pl.Moves) != 5 {
		t.Fatalf("after the soak: step %q, moves %d", pl.State.StepName, len(pl.Moves))
	}
}

func TestSkippedWindowsApproval(t *testing.T) {
	s := canary()
	s.Steps[1].RequireApproval = true
	cs := fleet(10, 1)
	in := Input{Profile: "p", Now: t0, Strategy: s, Revision: 2, Clusters: cs}
	pl := Decide(in)
	apply(cs, pl.Moves, t0)
	readyAll(cs)
	in.State = &pl.State
	pl = Decide(in)
	if pl.State.Phase != v1alpha1.RolloutWaitingForApproval || len(pl.Moves) != 0 || pl.State.Counts.WaitingForApproval != 1 {
		t.Fatalf("no approval: %s, moves %v, %+v", pl.State.Phase, pl.Moves, pl.State.Counts)
	}
	in.Approved = func(step string) bool { return step == "ten" }
	// Of the rest, one is unreachable and one waits for its window.
	for i := range cs {
		if cs[i].Revision == 1 {
			cs[i].Reachable = false
			break
		}
	}
	opens := t0.Add(30 * time.Second)
	for i := range cs {
		if cs[i].Revision == 1 && cs[i].Reachable {
			cs[i].Window = WindowState{Opens: opens}
			break
		}
	}
	pl = Decide(in)
	c := pl.State.Counts
	if c.Skipped != 1 || c.Done != 1 || c.WaitingForWindow+c.InProgress+c.Pending != 8 {
		t.Fatalf("counts %+v", c)
	}
	if pl.RequeueAfter > 31*time.Second {
		t.Fatalf("requeue %s, want when the window opens", pl.RequeueAfter)
	}
	_ = errors.New
}

// TestThousandClusters plans a rollout over 1,000 clusters to the end and
// checks that no cluster of a later step is moved before the earlier
// steps are done.
func TestThousandClusters(t *testing.T) {
	cs := fleet(1000, 1)
	pct := intstr.FromString("1%")
	s := canary()
	s.Steps[0].Clusters = &pct
	s.MaxConcurrent = ptr(intstr.FromInt32(50))
	in := Input{Profile: "p", Now: t0, Strategy: s, Revision: 2, Clusters: cs}
	seenStep := map[string]int{}
	for range 100 {
		pl := Decide(in)
		if len(pl.State.Failures) > MaxNamed || len(pl.State.Waiting) > MaxNamed {
			t.Fatal("unbounded status")
		}
		for _, m := range pl.Moves {
			if _, ok := seenStep[m.Cluster]; ok {
				t.Fatalf("%s moved twice", m.Cluster)
			}
			seenStep[m.Cluster] = int(pl.State.Step)
		}
		if pl.State.Phase == v1alpha1.RolloutComplete {
			break
		}
		apply(cs, pl.Moves, in.Now)
		readyAll(cs)
		in.State, in.Now = &pl.State, in.Now.Add(time.Second)
	}
	counts := map[int]int{}
	for _, k := range seenStep {
		counts[k]++
	}
	if len(seenStep) != 1000 || counts[0] != 10 || counts[1] != 99 || counts[2] != 891 {
		t.Fatalf("moved %d; per step %v", len(seenStep), counts)
	}
}

// An unreachable cluster is not a canary: the step takes a reachable one,
// and the unreachable one waits in the rest, skipped.
func TestUnreachableIsNoCanary(t *testing.T) {
	cs := fleet(10, 1)
	first := Decide(Input{Now: t0, Strategy: canary(), Revision: 2, Clusters: cs}).Moves[0].Cluster
	for i := range cs {
		if cs[i].Name == first {
			cs[i].Reachable = false
		}
	}
	pl := Decide(Input{Now: t0, Strategy: canary(), Revision: 2, Clusters: cs})
	if len(pl.Moves) != 1 || pl.Moves[0].Cluster == first || pl.State.Phase != v1alpha1.RolloutProgressing {
		t.Fatalf("moves %v (unreachable %s), phase %s", pl.Moves, first, pl.State.Phase)
	}
}

// A cluster the halted revision did not write to (it changes nothing
// there) is not rolled back.
func TestRollbackSkipsUnchanged(t *testing.T) {
	cs := fleet(2, 2)
	cs[0].Changed, cs[0].Previous, cs[0].Health = true, 1, Failed
	cs[1].Previous = 1 // holds revision 2 without a write
	pl := Decide(Input{Now: t0, Strategy: canary(), Revision: 2, Clusters: cs,
		State: &v1alpha1.RolloutStatus{Revision: 2, Phase: v1alpha1.RolloutProgressing}})
	if len(pl.Moves) != 1 || pl.Moves[0] != (Move{Cluster: "c000", To: 1}) {
		t.Fatalf("moves %v, want only the changed c000 back to 1", pl.Moves)
	}
}
