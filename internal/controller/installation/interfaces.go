package installation

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/gate"
	"github.com/annex-platform/annex/internal/resolve"
	"github.com/annex-platform/annex/internal/target"
)

// The controller owns the interfaces it needs; internal/manager wires
// the implementations. The types they exchange (resolve.Problem,
// gate.HookChange, internal/engine's Input and Release) are plain values;
// the cluster an installation targets is reached through internal/target's
// Cluster and Applier, which internal/manager implements. Revision
// records are the exception: internal/record's Keeper keeps Secrets of
// the hub through the controller's own clients, so the controller uses it
// directly and says when to write and trim them (records.go).

// Resolver chooses versions for every installation of one cluster
// together, over the Extensions on offer.
type Resolver interface {
	// Solve returns the resolution; installations that cannot be
	// satisfied are in Resolution.Failed with an explanation.
	Solve(extensions []v1alpha1.Extension, problem resolve.Problem) *resolve.Resolution
}

// Fence admits work on a cluster only while this manager's shard of
// managers serves it (internal/shard's Fence); a cluster being handed over
// to another shard waits until the work under way has ended.
type Fence interface {
	// Enter admits a reconcile that may write to cluster ("" is the hub)
	// and returns the function that ends it. ok false: another shard
	// serves the cluster, or nobody does while it is handed over, and the
	// reconcile must not touch it; err: try again.
	Enter(ctx context.Context, cluster string) (leave func(), ok bool, err error)
	// Owns reports whether the cluster is this shard's by its label or
	// served by it; it admits nothing.
	Owns(ctx context.Context, cluster string) bool
}

// Hooks asks the registered Hooks about a change within the
// installation's reconcile (internal/hookrequest): it makes the change's
// HookRequest and the hooks' resources, reads their answers and records
// them in the request's status.
type Hooks interface {
	// Ask asks the Hooks that select the change's installation for its
	// event and returns their verdict, waiting a little for answers to
	// the resources it has just created. A zero outcome's Request: no
	// Hook selects the change. Errors are the API server's, unwrapped.
	Ask(ctx context.Context, change gate.HookChange) (gate.HookOutcome, error)
	// WakeThrough hands over the installation controller, once, before
	// it starts: a later answer (any change of a hook's resource)
	// enqueues, through it, the installation the resource was made for.
	WakeThrough(c controller.Controller)
}

// Verifier checks who signed a version's artifact, as the policy of the
// catalog that supplied it asks (a Catalog's spec.verify), before any
// engine sees it.
type Verifier interface {
	// Verify returns the verification of src's artifact, ref naming it in
	// messages, under its catalog's policy (or the cluster default)
	// tightened by installMode (the installation's spec.verifyMode): nil
	// when no policy asks for any; otherwise the outcome,
	// Verified or not (with its Reason, its message and the policy's
	// Mode), which the controller acts on. Errors (a registry or the API
	// server not answering) are retried.
	Verify(ctx context.Context, ref string, src v1alpha1.ArtifactSource, installMode v1alpha1.VerificationMode) (*v1alpha1.ArtifactVerification, error)
}

// Engine makes releases of one kind of artifact: a Helm chart, an Annex
// package, an OLM registry+v1 bundle. internal/manager wires one Engine
// per engine name (v1alpha1.Engine). An engine decides nothing about what
// runs when: it reads only its input and the facts it asks for, and the
// controller chooses, from the status and the records, what of the
// release to apply.
type Engine interface {
	// Fetch downloads the artifact of src and returns it as the bytes a
	// revision's artifact digest covers (a bundle's tree as its canonical
	// JSON). Errors with Digests() (digestMismatch) or a Permanent()
	// method returning true fail the same way every time; others are
	// retried.
	Fetch(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error)
	// Render makes the release of in.Artifact. An *EngineError is the
	// engine's refusal, phrased for the user; an error of in.Facts is
	// returned as it is; anything else is retried. On an error the
	// release, when not nil, holds what the engine learnt before it
	// (ArtifactDigest, PlanNames).
	Render(ctx context.Context, in engine.Input) (*engine.Release, error)
}

// Clusters gives access to the cluster an installation targets.
type Clusters interface {
	// Target returns the cluster named by spec.cluster ("" is the cluster
	// Annex runs in). Errors are retried.
	Target(ctx context.Context, name string) (target.Cluster, error)
}
