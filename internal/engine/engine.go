// Package engine is the contract between the installation controller
// and the engines that make releases of artifacts (internal/engine/helm,
// internal/engine/pkg, internal/engine/bundle, wired by internal/manager):
// what an engine is given (Input, Facts), what it returns (Release, its
// PlanSet) and how it refuses (Error). The types are plain values; an
// engine decides nothing about what runs when, and the controller asks no
// engine its name: what differs between engines is data in the Release.
package engine

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/plan"
)

// Input is what an engine makes a release of.
type Input struct {
	// Artifact is what Engine.Fetch returned; ArtifactDigest its digest.
	Artifact       []byte
	ArtifactDigest string
	// Ref names the version in messages, e.g. "podinfo 6.5.0".
	Ref string
	// Name is the installation's name (a chart's release name, a
	// package's instance), Namespace the target namespace.
	Name, Namespace string
	// KubeVersion is the target cluster's Kubernetes version.
	KubeVersion string
	// IsUpgrade: a version is installed already.
	IsUpgrade bool
	// WatchNamespaces and Resources are spec.watchNamespaces and
	// spec.resources (an operator bundle's install mode and custom
	// resources).
	WatchNamespaces []string
	Resources       []v1alpha1.CustomResource
	// WebhookCertificates is spec.webhookCertificates: who issues an
	// operator's serving certificates (nil: Annex).
	WebhookCertificates *v1alpha1.WebhookCertificates
	// Facts answers what the engine needs to know beyond its artifact.
	Facts Facts
}

// Facts are what an engine may read beyond its artifact, each only
// when it needs it, so that an engine that does not ask costs no read.
// Their errors are the controller's (it phrases and classifies them); an
// engine returns them unchanged.
type Facts interface {
	// Values are spec.values merged with spec.valuesFrom.
	Values() (map[string]any, error)
	// APIVersions are the target cluster's API versions
	// ("group/version" and "group/version/Kind").
	APIVersions() ([]string, error)
	// InstalledParams are the effective parameters the installed
	// revision was made with; nil on install.
	InstalledParams() (map[string]any, error)
	// Base chooses the version of the package name that a package
	// extends, within versionRange, among the Extensions on offer.
	Base(name, versionRange string) (v1alpha1.ExtensionVersion, error)
	// Serves reports whether the target cluster serves gvk (its
	// discovery, asked again for a kind it did not know).
	Serves(gvk schema.GroupVersionKind) (bool, error)
	// Secret reads the data of the target cluster's Secret namespace/name
	// (an operator's webhook certificates); nil when there is none.
	Secret(namespace, name string) (map[string][]byte, error)
	// Now is the time certificates are issued and renewed at.
	Now() time.Time
}

// Error is an engine's refusal to make a release, phrased for the
// user: the Installed condition says Message, with Reason.
type Error struct {
	Reason, Message string
	// Retry: the same input may work next time (a base package that
	// did not download); otherwise it fails the same way every time and
	// the installation stops until its spec or the catalog changes.
	Retry bool
}

func (e *Error) Error() string { return e.Message }

// Refusal is how a render that failed with err stops the installation:
// nil when err is not the engine's (an I/O error, retried with backoff);
// a retry when the same input may render next time; otherwise terminal,
// and for an adoption (adoptedRelease, the Helm release spec.adopt names)
// it says that the release's values do not render and what to do.
func Refusal(err error, adoptedRelease string) *news.Stop {
	var refused *Error
	switch {
	case !errors.As(err, &refused):
		return nil
	case refused.Retry:
		return &news.Stop{Kind: news.Retry, Reason: refused.Reason, Message: refused.Message}
	case adoptedRelease != "":
		return &news.Stop{Kind: news.Terminal, Reason: refused.Reason, Message: fmt.Sprintf(
			"%s; the chart does not render with the values of Helm release %s (spec.values, copied from it) that spec.adopt names: change spec.values, or fix the release with helm upgrade and adopt it again",
			refused.Message, adoptedRelease)}
	}
	return &news.Stop{Kind: news.Terminal, Reason: refused.Reason, Message: refused.Message}
}

// Release is what an engine made of one version's artifact for one
// installation. What differs between engines is data here: the
// controller asks no engine its name.
type Release struct {
	// ArtifactDigest is what the revision records as its artifact
	// digest: the input's, or one over every archive the release was
	// made from (a package and the bases it extends).
	ArtifactDigest string
	// ValuesDigest is the digest of the values the release was made
	// from, when the engine digests them itself (a chart's effective
	// values); Inputs otherwise: the controller digests them, with
	// spec.scopedGrants when set.
	ValuesDigest string
	Inputs       any
	// CRDs and Objects are what a release without Plans applies, in one
	// pass (a chart's crds/ folder and templates, hooks included).
	CRDs, Objects []*unstructured.Unstructured
	// ManifestDigest is the digest of CRDs and Objects.
	ManifestDigest string
	// OnePass, for a release without Plans, makes the plan of its one
	// pass over crds and objects: CRDs and Objects as the controller
	// applies them (the target namespace Annex creates in front, RBAC
	// narrowed by spec.scopedGrants). For a chart, its phases and hook
	// weights as steps: its namespace, CRDs, the pre-install or
	// pre-upgrade hooks by weight, the manifest by kind, the post hooks.
	// The controller's driver runs it within one reconcile, without
	// checkpoints: its steps never wait, and the first error stops it.
	OnePass func(crds, objects []*unstructured.Unstructured) plan.Plan
	// Plans are the plans of a release that runs them across reconciles,
	// resumed from status.pending and status.plans; nil for a release
	// applied in one pass (see Resumable).
	Plans PlanSet
	// PlanNames are every plan the release offers, listed in status
	// (NEVER_RUN until they run); none for an engine that lists none.
	PlanNames []string
	// RunsOnRequest: spec.plans.run starts a plan of the release.
	RunsOnRequest bool
	// Params are the effective parameters, recorded with the revision;
	// Changed the ones that differ from the installed revision's.
	Params  map[string]any
	Changed []string
	// Warnings are what the engine warned of (the Warnings condition).
	Warnings []string
	// RollsBack: a failed or unhealthy attempt is retried, then
	// remediated (rolled back, uninstalled) as spec.upgrade and
	// spec.install say. Otherwise what is unhealthy after the plans
	// finished waits: rolling plans back is not Annex's to decide.
	RollsBack bool
	// Resources are spec.resources as the engine places them, applied by
	// the task named ResourcesTask; status.resources follows their
	// health. ResourcesTask is "" for an engine that takes none.
	Resources     []*unstructured.Unstructured
	ResourcesTask string
}

// Resumable reports whether the release runs plans across reconciles,
// each pass's step states written to status.plans so that a manager that
// stops anywhere resumes at the step it was in (a package's or a
// bundle's plans: Plans), rather than in one pass within one reconcile
// (OnePass: a chart). A chart runs in one pass because it is one Helm
// install or upgrade: its hooks and phases are not plans a person runs,
// abandons or resumes on their own, and applying it again from the start
// is what Helm does with an interrupted upgrade; the revision's record,
// written before the first object, keeps what a stopped pass applied
// owned. A package's plans are named, long-running and have effects that
// must not happen twice (Jobs, pipes), so each step is checkpointed. A
// nil release is not resumable.
func (r *Release) Resumable() bool { return r != nil && r.Plans != nil }

// PlanSet is a release's plans, rendered on demand: a change renders
// only the plans it runs.
type PlanSet interface {
	// Select names the plans a change runs, in order, and what
	// triggered them.
	Select(c Change) (names []string, trigger string)
	// Render renders the named plans, in order, and what they warn of.
	// An error is an *Error naming the plan.
	Render(names []string) ([]plan.Plan, []string, error)
	// Cleanup renders the plan an uninstall runs; nil when there is
	// none. Its warnings say why it will not run.
	Cleanup() (*plan.Plan, []string)
}

// Change is a change of the installed revision, for PlanSet.Select.
type Change struct {
	// Install: nothing is installed. Upgrade: a new version, or new
	// content of the installed one.
	Install, Upgrade bool
	// Changed are the parameters whose effective value changed.
	Changed []string
}
