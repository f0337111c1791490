// Package cli implements annexctl's commands as functions over Options
// structs; cmd/annexctl is a thin cobra layer over it.
package cli

import (
	"context"
	"fmt"
	"io"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/resolve"
)

// ResolveOptions configure Resolve.
type ResolveOptions struct {
	// Cluster is the ManagedCluster to resolve for; "" is the hub cluster.
	Cluster string
	// KubeVersion, when set, replaces the observed Kubernetes version: what
	// would happen if the cluster ran it.
	KubeVersion string
	// Set changes ranges hypothetically: "extension=range" replaces the range
	// of that extension's installations, or adds an installation if there is
	// none.
	Set []string
	// Output is table (the default), yaml or json (a ResolutionView).
	Output Output
	Out    io.Writer
}

// VersionObserver reads a cluster's Kubernetes version.
type VersionObserver func(ctx context.Context, cluster string) (string, error)

// Resolve prints what Annex would install on a cluster — versions, install
// order, what each change is — or why an installation cannot be satisfied,
// for the current state or a hypothetical change. It changes nothing.
func Resolve(ctx context.Context, c client.Reader, observe VersionObserver, o ResolveOptions) error {
	r, err := solve(ctx, c, observe, o)
	if err != nil {
		return err
	}
	if o.Output == OutputYAML || o.Output == OutputJSON {
		return writeData(o.Out, o.Output, resolutionViewOf(o, r))
	}
	printResolution(o.Out, o, r.observed, r.kubeVersion, r.problem, r.resolution)
	printHeld(o.Out, r.installations)
	return nil
}

// printHeld lists the changes a gate holds (status.change), with how
// each would change what the extension may do.
func printHeld(out io.Writer, insts []*v1alpha1.ExtensionInstallation) {
	var held []*v1alpha1.ExtensionInstallation
	for _, inst := range insts {
		if inst.Status.Change != nil {
			held = append(held, inst)
		}
	}
	if len(held) == 0 {
		return
	}
	sort.Slice(held, func(i, j int) bool { return nameOfInstallation(held[i]) < nameOfInstallation(held[j]) })
	fmt.Fprintln(out, "\nHeld at a gate:")
	for _, inst := range held {
		c := inst.Status.Change
		from := c.FromVersion
		if from == "" {
			from = "(not installed)"
		}
		why := ""
		if ready := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady); ready != nil && ready.Status != metav1.ConditionTrue {
			why = " — " + ready.Reason
		}
		fmt.Fprintf(out, "  %s: %s %s → %s (%s)%s\n", nameOfInstallation(inst), inst.Spec.Extension, from, c.ToVersion, c.Event, why)
		for _, l := range c.PermissionsGrow {
			fmt.Fprintf(out, "    grows:   %s\n", l)
		}
		for _, l := range c.PermissionsShrink {
			fmt.Fprintf(out, "    shrinks: %s\n", l)
		}
	}
}

func nameOfInstallation(inst *v1alpha1.ExtensionInstallation) string {
	return inst.Namespace + "/" + inst.Name
}

// solved is a cluster's installations and what the resolver chose for them.
type solved struct {
	observed, kubeVersion string
	installations         []*v1alpha1.ExtensionInstallation
	problem               resolve.Problem
	resolution            *resolve.Resolution
}

func solve(ctx context.Context, c client.Reader, observe VersionObserver, o ResolveOptions) (*solved, error) {
	var exts v1alpha1.ExtensionList
	if err := c.List(ctx, &exts); err != nil {
		return nil, fmt.Errorf("listing Extensions: %w", err)
	}
	insts, err := installationsOn(ctx, c, o.Cluster)
	if err != nil {
		return nil, err
	}
	observed, err := observe(ctx, o.Cluster)
	if err != nil && o.KubeVersion == "" {
		return nil, fmt.Errorf("reading the cluster's Kubernetes version (or pass --kube-version): %w", err)
	}
	kubeVersion := observed
	if o.KubeVersion != "" {
		kubeVersion = o.KubeVersion
	}
	problem := resolve.ProblemFor(kubeVersion, insts)
	if err := applySets(&problem, o.Set); err != nil {
		return nil, err
	}
	resolution := resolve.IndexOf(exts.Items).Solve(problem)
	return &solved{observed: observed, kubeVersion: kubeVersion, installations: insts, problem: problem, resolution: resolution}, nil
}

// installationsOn lists the installations that target cluster.
func installationsOn(ctx context.Context, c client.Reader, cluster string) ([]*v1alpha1.ExtensionInstallation, error) {
	var list v1alpha1.ExtensionInstallationList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing ExtensionInstallations: %w", err)
	}
	var insts []*v1alpha1.ExtensionInstallation
	for i := range list.Items {
		if list.Items[i].Spec.Cluster == cluster {
			insts = append(insts, &list.Items[i])
		}
	}
	return insts, nil
}

// applySets applies --set changes to the problem.
func applySets(p *resolve.Problem, sets []string) error {
	for _, s := range sets {
		ext, rng, ok := strings.Cut(s, "=")
		if !ok || ext == "" {
			return fmt.Errorf("--set %q: use extension=range, e.g. cert-manager=1.14.x", s)
		}
		if _, err := resolve.ParseRange(rng); err != nil {
			return fmt.Errorf("--set %q: %q is not a version range: %v", s, rng, err)
		}
		found := false
		for i := range p.Installations {
			if p.Installations[i].Extension == ext {
				p.Installations[i].Range, found = rng, true
			}
		}
		if !found {
			p.Installations = append(p.Installations, resolve.Installation{Name: "(planned)/" + ext, Extension: ext, Range: rng, Automatic: true})
		}
	}
	return nil
}

func printResolution(out io.Writer, o ResolveOptions, observed, kubeVersion string, p resolve.Problem, resolution *resolve.Resolution) {
	cluster := o.Cluster
	if cluster == "" {
		cluster = "the hub cluster"
	}
	fmt.Fprintf(out, "Resolution for %s, Kubernetes %s", cluster, kubeVersion)
	if o.KubeVersion != "" && observed != "" && observed != kubeVersion {
		fmt.Fprintf(out, " (hypothetical; it runs %s)", observed)
	}
	fmt.Fprintln(out)
	if len(o.Set) > 0 {
		fmt.Fprintf(out, "With: %s\n", strings.Join(o.Set, ", "))
	}
	// By the key of a Selection: the extension's name for its shared
	// version, InstanceKey for an instance, which runs a version of its own.
	installed := map[string]string{}
	requested := map[string][]string{}
	for _, inst := range p.Installations {
		key := inst.Extension
		if _, apart := resolution.Selected[resolve.InstanceKey(inst.Extension, inst.Name)]; apart {
			key = resolve.InstanceKey(inst.Extension, inst.Name)
		}
		if inst.Installed != "" {
			installed[key] = inst.Installed
		}
		requested[key] = append(requested[key], inst.Name)
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ORDER\tEXTENSION\tVERSION\tINSTALLED\tCHANGE\tFOR")
	for i, key := range resolution.InstallOrder {
		sel := resolution.Selected[key]
		why := strings.Join(requested[key], ", ")
		switch {
		case why == "":
			why = "dependency of " + strings.Join(sel.RequiredBy, ", ")
		case sel.Instance != "":
			why += " (instance)"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", i+1, sel.Extension, sel.Version.Version, orDash(installed[key]), change(installed[key], sel), why)
	}
	_ = w.Flush()
	if len(resolution.Failed) == 0 {
		return
	}
	fmt.Fprintln(out, "\nCannot be satisfied:")
	names := make([]string, 0, len(resolution.Failed))
	for name := range resolution.Failed {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(out, "  %s: %s\n", name, resolution.Failed[name].Message)
	}
}

func change(installed string, sel resolve.Selection) string {
	switch {
	case installed == "":
		return "install"
	case installed == sel.Version.Version && sel.Kept:
		return "keep (pinned)"
	case installed == sel.Version.Version:
		return "none"
	}
	iv, err1 := semver.NewVersion(installed)
	sv, err2 := semver.NewVersion(sel.Version.Version)
	if err1 == nil && err2 == nil && sv.LessThan(iv) {
		return "downgrade"
	}
	return "upgrade"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
