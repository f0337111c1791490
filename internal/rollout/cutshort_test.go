package rollout

import (
	"slices"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// TestCutShortChanges: a cluster whose installations disagree on their
// revision (a manager crashed between them) is never left so. A change to
// the rollout's revision is finished, even while paused; a change to or
// from a revision the rollout left behind (a newer revision came while the
// manager was down, or that revision's rollback was cut short) is undone:
// the cluster returns to the revision it ran before and waits for its step.
func TestCutShortChanges(t *testing.T) {
	base := fleet(10, 1)
	canaryName := Decide(Input{Now: t0, Strategy: canary(), Revision: 2, Clusters: base}).Moves[0].Cluster
	later := base[0].Name
	if later == canaryName {
		later = base[1].Name
	}
	for _, tc := range []struct {
		name string
		// cut is the cluster cut short, at revision with previous; state
		// the rollout's, of revision 3 unless it says otherwise.
		cut                string
		revision, previous int64
		reachable          bool
		state              v1alpha1.RolloutStatus
		paused             bool
		want               Move
		wantNone           bool
	}{
		// The canary's move to the rollout's revision is finished.
		{name: "finished in its step", cut: canaryName, revision: 3, previous: 1, reachable: true,
			state: v1alpha1.RolloutStatus{Revision: 3, Phase: v1alpha1.RolloutProgressing}, want: Move{canaryName, 3}},
		// A pause stops new moves, not the finishing of one cut short.
		{name: "finished while paused", cut: canaryName, revision: 3, previous: 1, reachable: true, paused: true,
			state: v1alpha1.RolloutStatus{Revision: 3, Phase: v1alpha1.RolloutProgressing}, want: Move{canaryName, 3}},
		// Revision 2 half-moved a cluster of a later step, then revision 3
		// came: the cluster returns to revision 1 until its step of 3.
		{name: "a newer revision came: undone", cut: later, revision: 2, previous: 1, reachable: true,
			state: v1alpha1.RolloutStatus{Revision: 3, Phase: v1alpha1.RolloutProgressing}, want: Move{later, 1}},
		// Revision 3 halted and was rolled back: a cluster half-moved by
		// revision 2 is not left so.
		{name: "the newer revision rolled back: undone", cut: later, revision: 2, previous: 1, reachable: true,
			state: v1alpha1.RolloutStatus{Revision: 3, Phase: v1alpha1.RolloutRolledBack, HaltReason: "StepFailed: x"}, want: Move{later, 1}},
		// Without a record of the revision it ran before, the change is
		// finished.
		{name: "no previous revision: finished", cut: later, revision: 2, previous: 0, reachable: true,
			state: v1alpha1.RolloutStatus{Revision: 3, Phase: v1alpha1.RolloutProgressing}, want: Move{later, 2}},
		// An unreachable cluster is left until it answers.
		{name: "unreachable", cut: later, revision: 2, previous: 1, reachable: false,
			state: v1alpha1.RolloutStatus{Revision: 3, Phase: v1alpha1.RolloutProgressing}, wantNone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fleet(10, 1)
			for i := range cs {
				if cs[i].Name == tc.cut {
					cs[i].Revision, cs[i].Previous, cs[i].Partial, cs[i].Reachable = tc.revision, tc.previous, true, tc.reachable
					cs[i].Health, cs[i].ChangedAt = Progressing, t0
				}
			}
			strategy := canary()
			strategy.Paused = tc.paused
			pl := Decide(Input{Profile: "p", Now: t0, Strategy: strategy, Revision: 3, State: &tc.state, Clusters: cs})
			i := slices.IndexFunc(pl.Moves, func(m Move) bool { return m.Cluster == tc.cut })
			switch {
			case tc.wantNone && i >= 0:
				t.Fatalf("moves %v, want none of %s", pl.Moves, tc.cut)
			case !tc.wantNone && (i < 0 || pl.Moves[i] != tc.want):
				t.Fatalf("moves %v, want %v (phase %s: %s)", pl.Moves, tc.want, pl.State.Phase, pl.State.Message)
			}
		})
	}
}
