package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
)

// rolloutKill is one crash of a profile's rollout from revision 1 (every
// extension at goodVersions[0]) to revision 2 (versions): the test brings
// the rollout to a place (prepare), starts the manager with point armed
// for the profile, waits until it kills itself there, checks where the
// rollout stood, makes revision 3 (then) if asked while the manager is
// down, then starts the manager unarmed and expects the rollout of the
// last revision to end in phase end.
type rolloutKill struct {
	name     string
	versions []string
	prepare  rolloutPrepare
	point    string
	// When the manager died, the rollout was in phase at step; full
	// clusters had every installation at revision 2, half some.
	phase      v1alpha1.RolloutPhase
	step       string
	full, half int
	then       []string
	end        v1alpha1.RolloutPhase
}

// rolloutPrepare is where the test brings a rollout before it arms the
// kill point.
type rolloutPrepare int

const (
	// managerDown: the versions change while the manager is down, so the
	// armed manager's first move is the canary's.
	managerDown rolloutPrepare = iota
	// canarySoaking: the manager runs until the canary is done and soaks
	// (its step has a soak time), so the armed manager's first move is the
	// rest step's.
	canarySoaking
	// canaryMoved: the manager runs until the canary runs revision 2, so
	// that the armed manager's first move is the canary's rollback.
	canaryMoved
)

// rolloutKills cover each kill point of a rollout during a step of a good
// revision (the canary's and the rest's) and during the halt and rollback
// of a revision that never becomes healthy.
var rolloutKills = []rolloutKill{
	// The canary step is recorded; no cluster changed.
	{name: "state-canary", versions: []string{"1.1.0", "1.1.0"}, prepare: managerDown, point: failpoint.RolloutAfterState,
		phase: v1alpha1.RolloutProgressing, step: "canary", end: v1alpha1.RolloutComplete},
	// The canary's first installation moved, its second not.
	{name: "move-canary", versions: []string{"1.1.0", "1.1.0"}, prepare: managerDown, point: failpoint.RolloutAfterFirstMove,
		phase: v1alpha1.RolloutProgressing, step: "canary", half: 1, end: v1alpha1.RolloutComplete},
	// The rest step is recorded; only the canary changed.
	{name: "state-rest", versions: []string{"1.1.0", "1.1.0"}, prepare: canarySoaking, point: failpoint.RolloutAfterState,
		phase: v1alpha1.RolloutProgressing, step: "rest", full: 1, end: v1alpha1.RolloutComplete},
	// The rest step's first cluster half-moved, the others not at all.
	{name: "move-rest", versions: []string{"1.1.0", "1.1.0"}, prepare: canarySoaking, point: failpoint.RolloutAfterFirstMove,
		phase: v1alpha1.RolloutProgressing, step: "rest", full: 1, half: 1, end: v1alpha1.RolloutComplete},
	// The canary timed out: the halt and the rollback are recorded, the
	// canary still runs the bad revision.
	{name: "state-halt", versions: []string{badVersion, "1.0.0"}, prepare: canaryMoved, point: failpoint.RolloutAfterState,
		phase: v1alpha1.RolloutRollingBack, step: "canary", full: 1, end: v1alpha1.RolloutRolledBack},
	// The rollback returned the canary's first installation, not its
	// second.
	{name: "rollback", versions: []string{badVersion, "1.0.0"}, prepare: canaryMoved, point: failpoint.RolloutDuringRollback,
		phase: v1alpha1.RolloutRollingBack, step: "canary", half: 1, end: v1alpha1.RolloutRolledBack},
	// The rest step's first cluster half-moved; before the manager is
	// back, a bad revision 3 comes, halts on the canary and is rolled
	// back: the half-moved cluster, which revision 3 never reached,
	// returns whole to revision 1, the revision it ran before.
	{name: "superseded", versions: []string{"1.1.0", "1.1.0"}, prepare: canarySoaking, point: failpoint.RolloutAfterFirstMove,
		phase: v1alpha1.RolloutProgressing, step: "rest", full: 1, half: 1, then: []string{badVersion, "1.1.0"}, end: v1alpha1.RolloutRolledBack},
}

// rolloutKillFleet is how many clusters each scenario's profile selects:
// the canary and two in the rest step.
const rolloutKillFleet = 3

// TestRolloutKillPoints crashes the manager at each kill point of a
// profile's rollout, during a step of a good revision and during the
// rollback of a bad one, and checks that the next manager resumes where
// the rollout stood: a good revision completes, a bad one is rolled back;
// no cluster outside the step was changed early, none is left half-moved,
// nothing is orphaned on the member, and the counts add up.
func TestRolloutKillPoints(t *testing.T) {
	r := newRolloutRig(t)
	r.mgr.start()
	r.awaitCatalog(t)
	fleets := map[string][]string{}
	for _, sc := range rolloutKills {
		soak := time.Duration(0)
		if sc.prepare == canarySoaking {
			soak = 5 * time.Second
		}
		fleets[sc.name] = r.fleet(t, sc.name, rolloutKillFleet, soak)
	}
	for _, sc := range rolloutKills {
		r.awaitRollout(t, sc.name, 1, v1alpha1.RolloutComplete)
	}
	r.mgr.kill()
	for _, sc := range rolloutKills {
		t.Run(sc.name, func(t *testing.T) {
			r.mgr.t = t
			runRolloutKill(t, r, sc, fleets[sc.name])
		})
		if t.Failed() {
			return
		}
	}
}

func runRolloutKill(t *testing.T, r *rolloutRig, sc rolloutKill, clusters []string) {
	armed := failpoint.Env(sc.point, "", sc.name, 1)
	switch sc.prepare {
	case managerDown:
		r.change(t, sc.name, sc.versions, false)
	case canarySoaking:
		r.mgr.start()
		r.change(t, sc.name, sc.versions, false)
		r.awaitRollout(t, sc.name, 2, v1alpha1.RolloutSoaking)
		r.mgr.kill()
	case canaryMoved:
		r.mgr.start()
		r.change(t, sc.name, sc.versions, false)
		awaitFleet(t, r, clusters, func(s fleetState) bool { full, _ := s.moved(2); return full == 1 })
		r.mgr.kill()
	}
	r.mgr.start(armed)
	if !r.mgr.awaitDeath(2 * time.Minute) {
		r.mgr.kill()
		t.Fatalf("the manager never reached %s for profile %s", sc.point, sc.name)
	}
	ro := r.profile(t, sc.name).Status.Rollout
	full, half := r.state(t, clusters).moved(2)
	// The manager writes up to 16 clusters at once: when one of them has
	// its first installation written, others of the step may have theirs
	// (or all of theirs) too. At least the scenario's clusters are; the
	// watch's check at the end sees that none was outside the step.
	if ro == nil || ro.Revision != 2 || ro.Phase != sc.phase || ro.StepName != sc.step || full < sc.full || half < sc.half ||
		(sc.half == 0 && half != 0) {
		t.Fatalf("killed at %s: rollout %+v with %d clusters at revision 2 and %d half-moved; want revision 2 %s at step %s, at least %d and %d",
			sc.point, ro, full, half, sc.phase, sc.step, sc.full, sc.half)
	}

	last, byRevision := int64(2), map[int64][]string{1: {goodVersions[0], goodVersions[0]}, 2: sc.versions}
	if sc.then != nil {
		last, byRevision[3] = 3, sc.then
		r.change(t, sc.name, sc.then, false)
	}
	r.mgr.start()
	defer r.mgr.kill()
	r.awaitRollout(t, sc.name, last, sc.end)
	// Complete: every cluster runs the last revision. RolledBack: the
	// canary runs the revision before it, the others never left revision 1.
	canary := r.watch.canary(t, clusters)
	revisions, versions := map[string]int64{}, map[string][]string{}
	for _, c := range clusters {
		switch {
		case sc.end == v1alpha1.RolloutComplete:
			revisions[c] = last
		case c == canary:
			revisions[c] = last - 1
		default:
			revisions[c] = 1
		}
		versions[c] = byRevision[revisions[c]]
	}
	r.awaitSettled(t, clusters, revisions, versions)
	r.watch.checkSteps(t, clusters)
	p := r.awaitRollout(t, sc.name, last, sc.end)
	checkCounts(t, p, len(clusters))
	c := p.Status.Rollout.Counts
	switch sc.end {
	case v1alpha1.RolloutComplete:
		if c.Done != int32(len(clusters)) {
			t.Errorf("counts %+v, want %d done", c, len(clusters))
		}
	case v1alpha1.RolloutRolledBack:
		if c.RolledBack != 1 || !strings.Contains(p.Status.Rollout.HaltReason, canary) {
			t.Errorf("counts %+v, halt reason %q: want the canary %s rolled back", c, p.Status.Rollout.HaltReason, canary)
		}
	}
	r.checkMember(t)
}

// awaitFleet waits until the fleet's state satisfies ok.
func awaitFleet(t *testing.T, r *rolloutRig, clusters []string, ok func(fleetState) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !ok(r.state(t, clusters)) {
		if time.Now().After(deadline) {
			t.Fatalf("the fleet %v did not reach the awaited state within 2 minutes", clusters)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
