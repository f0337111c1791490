package installation

import (
	"github.com/go-logr/logr"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
	"github.com/annex-platform/annex/internal/depend"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/readiness"
	"github.com/annex-platform/annex/internal/record"
	"github.com/annex-platform/annex/internal/resolve"
	"github.com/annex-platform/annex/internal/target"
)

// scope holds what one reconcile fetched and observed; later steps and the
// status code read it instead of fetching again. Every step reads the
// installation, its target and the chosen version; what one step makes
// for the next is grouped by the step that owns it.
type scope struct {
	inst    *v1alpha1.ExtensionInstallation
	written *v1alpha1.ExtensionInstallation // the object as last written, for status patches

	target  target.Cluster
	cluster *depend.Cluster   // every installation on the target cluster, the Extensions, and the resolver's answer
	choice  resolve.Selection // this installation's version, as the resolver chose it

	artifact artifact     // fetch and render: the chosen version's artifact and what its engine made of it
	applied  appliedState // apply and drift check: what the installed revision owns and how healthy it was seen
	records  recordsState // revision records: the installed one as read, and those a takeover lists, supersedes and writes

	block   *block    // why the installation cannot go on, if it cannot
	outcome outcome   // how the reconcile ended, for the status write
	report  reporting // what the reconcile tells in logs and Events
}

// artifact is what the fetch and render steps made of the chosen version.
type artifact struct {
	data []byte // the artifact, as the engine fetched it
	// digest is the sha256 of data, recorded with the revision (or the
	// release's digest of every archive it was made from).
	digest  string
	release *engine.Release // what the engine made of the artifact
	// run is what this reconcile's inputs run of a release with plans;
	// nil for a release applied in one pass (see Release.Resumable).
	run       *planRun
	resources []v1alpha1.ObjectReference // spec.resources as the engine places them
	// adoption is what this reconcile's first install takes over
	// (spec.adopt), once adoptRelease checked it; nil otherwise.
	adoption *adopt.Takeover
}

// appliedState is what the apply step, or the drift check, left and saw.
type appliedState struct {
	inventory []v1alpha1.ObjectReference // what the installed revision owns
	// health is the inventory's health as this reconcile's apply or drift
	// check saw it, for waitHealthy; nil when it must be read.
	health *target.Health
}

// recordsState is this reconcile's part in the revision records.
type recordsState struct {
	keeper   *record.Keeper // reads the installed one once, writes, takes over and deletes the records (records.go)
	recorded bool           // this reconcile recorded a revision in the status
}

// outcome is how the reconcile ended, beside s.block: what summarize and
// finish make of it.
type outcome struct {
	healthy   bool // every applied object is healthy
	suspended bool
	gone      bool // the object was deleted during this reconcile
	stale     bool // the reconcile read an outdated installation: no status write
}

// reporting is what the reconcile tells: the Events it records and the
// log lines that go with them (observe.go).
type reporting struct {
	log      logr.Logger     // carries the installation and its cluster
	before   news.Standing   // where the installation stood when the reconcile began
	wasReady bool            // Ready for the current generation when the reconcile began
	told     map[string]bool // the reasons of the Events recorded so far
	// applied is the Event telling the revision this reconcile applied,
	// recorded when the reconcile ends (see announce).
	applied *news.Note
}

func newScope(inst *v1alpha1.ExtensionInstallation) *scope {
	return &scope{inst: inst, written: inst.DeepCopy(), report: reporting{wasReady: readiness.IsReady(inst), before: news.StandingOf(inst)}}
}

// observe keeps h, the health an apply or drift check has just seen, for
// waitHealthy, when it covers the whole inventory.
func (s *scope) observe(h target.Health) {
	if h.Total == len(s.applied.inventory) {
		s.applied.health = &h
	}
}

// presentOthers lists the other installations on the cluster that can
// meet a dependency, by extension (depend.Present).
func (s *scope) presentOthers() map[string][]resolve.Present {
	return depend.Present(s.cluster, s.inst)
}

// owner is the installation as the applier knows it: its name, and the
// objects it and the other installations on its cluster adopted without
// writing them (see adoptedByOthers).
func (s *scope) owner() target.Owner {
	return target.Owner{Name: s.inst.Name, Namespace: s.inst.Namespace, Adopted: s.inst.Status.AdoptedObjects, AdoptedByOthers: s.adoptedByOthers()}
}

func (s *scope) targetNamespace() string {
	if s.inst.Spec.TargetNamespace != "" {
		return s.inst.Spec.TargetNamespace
	}
	return s.inst.Namespace
}

// block is why an installation is not Ready (news.Stop: its kind —
// terminal, retry, wait, stalled —, reason and message); it is also an
// error, so that a terminal block can be returned as
// reconcile.TerminalError.
type block = news.Stop

// blockKind is a block's kind.
type blockKind = news.Kind

const (
	blockTerminal = news.Terminal
	blockRetry    = news.Retry
	blockWait     = news.Wait
	blockStalled  = news.Stalled
)

func terminal(reason, message string) *block {
	return &block{Kind: blockTerminal, Reason: reason, Message: message}
}
func retry(reason, message string) *block {
	return &block{Kind: blockRetry, Reason: reason, Message: message}
}
func wait(reason, message string) *block {
	return &block{Kind: blockWait, Reason: reason, Message: message}
}

// summarize computes Ready, Reconciling and Stalled from the outcome of
// the steps (readiness.Summarize). Ready is never set anywhere else.
func summarize(s *scope, err error) {
	readiness.Summarize(s.inst, readiness.Outcome{Suspended: s.outcome.suspended, Healthy: s.outcome.healthy, Stop: s.block, Err: err})
}
