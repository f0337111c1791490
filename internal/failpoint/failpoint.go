// Package failpoint kills the process at a named point of its work, so
// that the fault tests can crash the manager exactly where a crash is
// hardest to survive (after a record is written, after the first object
// is applied, before the status is written, ...), instead of hoping a
// random SIGKILL lands there.
//
// A point is armed by the environment variable ANNEX_FAILPOINT:
//
//	ANNEX_FAILPOINT=<point>[@<namespace>/<name>][#<n>]
//
// kills the process with SIGKILL the n-th time (default: the first) the
// point is reached, counting only hits for the object <namespace>/<name>
// (<name> for a cluster-scoped object, such as a profile) when one is
// given. Nothing runs after the kill: no
// deferred function, no status write, no cleanup, as after a power loss
// or an OOM kill. Before it kills, it prints "failpoint <point> fired" on
// standard error.
//
// Unarmed (the variable unset, as in production), Hit costs one comparison.
package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The points the manager passes, in the order of one apply. Tests arm them
// by these names.
const (
	// AfterIntent: the revision record is written, nothing applied yet.
	AfterIntent = "apply/after-intent"
	// AfterRecordIndex: a large record's index is written, its pieces not.
	AfterRecordIndex = "record/after-index"
	// AfterFirstObject: the first object of an apply has been written.
	AfterFirstObject = "apply/after-first-object"
	// AfterObjects: every object is applied, nothing pruned yet.
	AfterObjects = "apply/after-objects"
	// DuringPrune: the first object that left the set has been deleted.
	DuringPrune = "apply/during-prune"
	// AfterEvent: the revision is recorded in memory and its event posted;
	// the status is not written.
	AfterEvent = "apply/after-event"
	// BeforeStatus: the reconcile is done and about to write the status.
	BeforeStatus = "status/before-write"
	// RollbackAfterIntent: a rollback's record is written, nothing applied.
	RollbackAfterIntent = "rollback/after-intent"
	// UninstallAfterFirstDelete: an uninstall has deleted its first object.
	UninstallAfterFirstDelete = "uninstall/after-first-delete"
	// AfterPlanStep: a step of a package's plan ran and its state is not
	// written yet.
	AfterPlanStep = "plan/after-step"
)

// The point a shard passes when it hands a cluster over, keyed by the
// ManagedCluster's name.
const (
	// ShardBeforeRelease: the shard's work on a relabelled cluster has
	// ended and none is admitted; status.shard still names the shard.
	ShardBeforeRelease = "shard/before-release"
)

// The points a profile's rollout passes, keyed by the profile's name.
const (
	// RolloutAfterState: status.rollout is written (a new step, or a
	// halt and its rollback, recorded) and the reconcile moves clusters
	// next; no installation is changed yet.
	RolloutAfterState = "rollout/after-state"
	// RolloutAfterFirstMove: an installation of a cluster the rollout
	// moves is written (hit after each; the first with #1), the rest of
	// the cluster's installations and the step's other clusters not.
	RolloutAfterFirstMove = "rollout/after-first-move"
	// RolloutDuringRollback: an installation a rollback returns to the
	// revision it ran before is written (hit after each; the first with
	// #1), the others not.
	RolloutDuringRollback = "rollout/during-rollback"
)

// spec is the armed point; the zero spec arms nothing.
type spec struct {
	point string
	key   string // "<namespace>/<name>", or "" for any
	nth   int
}

var (
	armed = parse(os.Getenv("ANNEX_FAILPOINT"))
	mu    sync.Mutex
	hits  int
)

// parse reads ANNEX_FAILPOINT; a malformed value arms nothing, so a typo
// cannot take a production manager down.
func parse(v string) spec {
	if v == "" {
		return spec{}
	}
	s := spec{nth: 1}
	if i := strings.LastIndexByte(v, '#'); i >= 0 {
		n, err := strconv.Atoi(v[i+1:])
		if err != nil || n < 1 {
			return spec{}
		}
		s.nth, v = n, v[:i]
	}
	if i := strings.IndexByte(v, '@'); i >= 0 {
		s.key, v = v[i+1:], v[:i]
	}
	s.point = v
	return s
}

// Hit marks that the process reached point while working on the object
// key ("<namespace>/<name>", or "<name>" when cluster-scoped); it kills the
// process when that is the armed point's n-th hit.
func Hit(point, key string) {
	if armed.point != point || (armed.key != "" && armed.key != key) {
		return
	}
	mu.Lock()
	hits++
	fire := hits == armed.nth
	mu.Unlock()
	if fire {
		fmt.Fprintf(os.Stderr, "failpoint %s fired (%s)\n", point, key)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way; nothing else may run
	}
}

// Env returns the ANNEX_FAILPOINT setting that arms point for the n-th hit
// on the object namespace/name (name alone when namespace is "": a
// cluster-scoped object; any object when name is "").
func Env(point, namespace, name string, n int) string {
	v := "ANNEX_FAILPOINT=" + point
	switch {
	case name == "":
	case namespace == "":
		v += "@" + name
	default:
		v += "@" + namespace + "/" + name
	}
	return v + "#" + strconv.Itoa(n)
}
