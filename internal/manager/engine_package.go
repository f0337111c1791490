package manager

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/engine/pkg"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/values"
)

// packageEngine makes releases of Annex packages with internal/engine/pkg:
// the package merged onto the bases it extends, its parameters resolved,
// and its plans, rendered when a change runs them.
type packageEngine struct{ fetcher artifactFetcher }

// maxExtendsDepth bounds an extends chain (and breaks cycles).
const maxExtendsDepth = 5

func (e packageEngine) Fetch(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error) {
	return e.fetcher.FetchArtifact(ctx, src)
}

// Render loads the package and its bases, merges them and validates the
// parameters. Invalid parameters and broken packages are refused here;
// the release then holds the plans the package offers.
func (e packageEngine) Render(ctx context.Context, in engine.Input) (*engine.Release, error) {
	values, err := in.Facts.Values()
	if err != nil {
		return nil, err
	}
	effective, digest, warnings, err := e.load(ctx, in)
	if err != nil {
		return nil, err
	}
	rel := &engine.Release{
		ArtifactDigest: digest,
		PlanNames:      slices.Sorted(maps.Keys(effective.Operator.Plans)),
		RunsOnRequest:  true,
		Warnings:       warnings,
	}
	installed, err := in.Facts.InstalledParams()
	if err != nil {
		return rel, err
	}
	params, err := pkg.Resolve(effective, values, installed)
	if err != nil {
		return rel, refused(v1alpha1.ReasonValuesInvalid, fmt.Sprintf("spec.values: %v; see %s params.yaml", err, in.Ref))
	}
	rel.Inputs, rel.Params, rel.Changed = params, params, pkg.Changed(effective, installed, params)
	rel.Plans = packagePlans{p: effective, ref: in.Ref,
		in: pkg.Input{Instance: in.Name, Namespace: in.Namespace, Params: params, KubeVersion: in.KubeVersion}}
	return rel, nil
}

// load reads the package and, through its extends chain, the bases it
// builds on, and merges them. The digest covers every archive of the
// chain, so that a new base version within the range is a new input.
func (e packageEngine) load(ctx context.Context, in engine.Input) (*pkg.Package, string, []string, error) {
	top, err := pkg.LoadArchive(in.Artifact)
	if err != nil {
		return nil, "", nil, refused(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("%s: the artifact is not a valid package: %v; fix the package in its catalog or choose another version", in.Ref, err))
	}
	chain := []*pkg.Package{top}
	digests := []string{in.ArtifactDigest}
	for ext := top.Operator.Extends; ext != nil; ext = chain[0].Operator.Extends {
		if len(chain) > maxExtendsDepth {
			return nil, "", nil, refused(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("%s: the extends chain is longer than %d packages (or a cycle); shorten it", in.Ref, maxExtendsDepth))
		}
		name := cmp.Or(ext.Operator, ext.Name)
		version, err := in.Facts.Base(name, ext.Version)
		if err != nil {
			return nil, "", nil, err
		}
		data, err := e.fetcher.FetchArtifact(ctx, version.Source)
		if err != nil {
			return nil, "", nil, &engine.Error{Reason: v1alpha1.ReasonArtifactFailed, Retry: true,
				Message: fmt.Sprintf("%s extends %s %s: fetching it: %v", in.Ref, name, version.Version, err)}
		}
		base, err := pkg.LoadArchive(data)
		if err != nil {
			return nil, "", nil, refused(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("%s extends %s %s, which is not a valid package: %v", in.Ref, name, version.Version, err))
		}
		chain = append([]*pkg.Package{base}, chain...)
		digests = append(digests, values.DigestBytes(data))
	}
	merged, warnings, err := pkg.MergeChain(chain)
	if err != nil {
		return nil, "", nil, refused(v1alpha1.ReasonRenderFailed, fmt.Sprintf("%s: extends: %v", in.Ref, err))
	}
	if len(digests) == 1 {
		return merged, digests[0], warnings, nil
	}
	return merged, values.DigestBytes([]byte(strings.Join(digests, ","))), warnings, nil
}

// packagePlans are a package's plans, rendered with its effective
// parameters.
type packagePlans struct {
	p   *pkg.Package
	in  pkg.Input
	ref string
}

// Select chooses as KUDO does (pkg.SelectPlans): install → deploy;
// upgrade → upgrade, else update, else deploy; changed parameters → their
// triggers in params.yaml order, else update, else deploy.
func (pp packagePlans) Select(c engine.Change) ([]string, string) {
	if c.Install {
		return pkg.SelectPlans(pp.p, pkg.Change{Install: true})
	}
	plans, trigger := pkg.SelectPlans(pp.p, pkg.Change{Upgrade: c.Upgrade, Changed: c.Changed})
	if len(plans) == 0 {
		plans = []string{firstPlan(pp.p, pkg.PlanUpdate, pkg.PlanDeploy)}
	}
	return plans, trigger
}

// firstPlan returns the first of names the package has.
func firstPlan(p *pkg.Package, names ...string) string {
	for _, n := range names {
		if _, ok := p.Operator.Plans[n]; ok {
			return n
		}
	}
	return names[len(names)-1]
}

func (pp packagePlans) Render(names []string) ([]plan.Plan, []string, error) {
	var plans []plan.Plan
	var warnings []string
	start := time.Now()
	for _, name := range names {
		p, w, err := pkg.RenderPlan(pp.p, name, pp.in)
		if err != nil {
			return nil, nil, refused(v1alpha1.ReasonRenderFailed, fmt.Sprintf("%s: plan %s does not render: %v; fix spec.values or choose another version",
				pp.ref, name, err))
		}
		plans = append(plans, p)
		warnings = append(warnings, w...)
	}
	metrics.ObserveRender(v1alpha1.EnginePackage, time.Since(start))
	return plans, warnings, nil
}

func (pp packagePlans) Cleanup() (*plan.Plan, []string) {
	if _, ok := pp.p.Operator.Plans[pkg.PlanCleanup]; !ok {
		return nil, nil
	}
	p, _, err := pkg.RenderPlan(pp.p, pkg.PlanCleanup, pp.in)
	if err != nil {
		return nil, []string{fmt.Sprintf("plan cleanup does not render (%v): it will not run on uninstall", err)}
	}
	return &p, nil
}
