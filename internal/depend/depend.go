// Package depend holds the installation controller's decisions about
// the dependencies among the installations of one cluster, given the
// resolver's answer: which installations need an installation
// (RequiredBy), which hold its deletion (HeldBy), which installations
// Annex adds for the dependencies of a chosen version (Additions), which
// installations own one it added (Owners), which installations can meet a
// dependency (Present), and which installations provide, with the CRDs
// they installed, the APIs operators require (ProvidedAPIs). It is a pure
// core: the controller reads the hub, passes a Cluster and carries out
// what these return; the only read of a cluster, ProvidedAPIs', goes
// through the CRDSource it is given.
package depend

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/fleet"
	"github.com/annex-platform/annex/internal/readiness"
	"github.com/annex-platform/annex/internal/resolve"
)

// Cluster is what one reconcile knows of an installation's cluster:
// every installation on it and every Extension on offer. Apart from the
// reconciled installation they are the cache's own objects: never modify
// them.
type Cluster struct {
	Installations []*v1alpha1.ExtensionInstallation // same spec.cluster, including the reconciled one
	Extensions    []v1alpha1.Extension
	// Resolution is the resolver's answer for every installation on the
	// cluster; nil until the resolve step ran (and on uninstall).
	Resolution *resolve.Resolution
	// Provided are the APIs operators require whose CRDs installations
	// on the cluster own, by extension (resolve.Problem.Provided); nil
	// until they were read (ProvidedAPIs).
	Provided map[string]string
	// Asked are the extensions the installations ask for, without
	// repeats; nil until the resolve step ran (then Installations tell).
	Asked []string
}

// NameOf is an installation's name in a resolution and in status:
// "namespace/name".
func NameOf(inst *v1alpha1.ExtensionInstallation) string { return inst.Namespace + "/" + inst.Name }

// asked lists the extensions the installations ask for (c.Asked, or
// with repeats when the resolve step did not run).
func (c *Cluster) asked() []string {
	if c.Asked != nil {
		return c.Asked
	}
	out := make([]string, 0, len(c.Installations))
	for _, i := range c.Installations {
		out = append(out, i.Spec.Extension)
	}
	return out
}

// isInstance reports whether other runs a version of its own, apart from
// its extension's shared one: it meets no dependency. False while the
// cluster is not resolved.
func (c *Cluster) isInstance(other *v1alpha1.ExtensionInstallation) bool {
	if c.Resolution == nil {
		return false
	}
	sel, ok := c.Resolution.For(other.Spec.Extension, NameOf(other))
	return ok && sel.Instance != ""
}

// versions are the catalogs' versions with their dependencies as the
// resolver sees them: an operator's required APIs hold the extension that
// provides them (resolve.UniverseWithRequirements).
func (c *Cluster) versions() resolve.Universe {
	return resolve.UniverseWithRequirements(c.Extensions, c.asked(), c.Provided)
}

// RequiredBy lists the installations whose chosen version depends on
// inst's extension, and those no version fits any more whose installed
// version does (they keep running it), sorted. An instance of an
// extension serves no dependency (the shared version does), so nothing
// requires it. c.Resolution must be set.
func RequiredBy(c *Cluster, inst *v1alpha1.ExtensionInstallation) []string {
	resolution := c.Resolution
	if c.isInstance(inst) {
		return nil
	}
	dependentExts := map[string]bool{} // shared versions that depend on it
	dependentInstances := map[string]bool{}
	for _, sel := range resolution.Selected {
		for _, dep := range sel.Version.Dependencies {
			switch {
			case dep.Name != inst.Spec.Extension:
			case sel.Instance != "":
				dependentInstances[sel.Instance] = true
			default:
				dependentExts[sel.Extension] = true
			}
		}
	}
	if len(dependentExts) == 0 && len(dependentInstances) == 0 && len(resolution.Failed) == 0 {
		return nil // nothing depends on it, and no failed installation keeps running a version that may
	}
	var out []string
	var versions resolve.Universe // read only for an installation no version fits any more
	for _, other := range c.Installations {
		if other == inst {
			continue
		}
		name := NameOf(other)
		_, isInstance := resolution.Selected[resolve.InstanceKey(other.Spec.Extension, name)]
		if dependentInstances[name] || dependentExts[other.Spec.Extension] && !isInstance {
			out = append(out, name)
			continue
		}
		if resolution.Failed[name] == nil || other.Status.InstalledVersion == "" {
			continue
		}
		if versions == nil {
			versions = c.versions()
		}
		if installedNeeds(other, versions, inst.Spec.Extension) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// installedNeeds reports whether other's installed version depends on
// extension, in versions.
func installedNeeds(other *v1alpha1.ExtensionInstallation, versions resolve.Universe, extension string) bool {
	for _, v := range versions[other.Spec.Extension] {
		if v.Version == other.Status.InstalledVersion {
			return slices.ContainsFunc(v.Dependencies, func(d v1alpha1.Dependency) bool { return d.Name == extension })
		}
	}
	return false
}

// HeldBy lists the installations that still use inst's extension, as
// "namespace/name (extension version[, being uninstalled])", sorted:
// their installed version depends on it and no other live installation
// of the extension remains (one that runs as an instance serves the
// dependents as soon as the resolver finds it can, or Annex adds one
// that does). Deleting inst waits until they are gone
// (uninstall.HeldMessage). It reads no resolution; c.Provided, when set,
// makes an operator's required APIs hold the extension that provides
// them.
func HeldBy(c *Cluster, inst *v1alpha1.ExtensionInstallation) []string {
	for _, other := range c.Installations {
		if other != inst && other.Spec.Extension == inst.Spec.Extension && other.DeletionTimestamp.IsZero() {
			return nil
		}
	}
	versions := c.versions()
	var held []string
	for _, other := range c.Installations {
		if other == inst || other.Status.InstalledVersion == "" {
			continue
		}
		state := ""
		if !other.DeletionTimestamp.IsZero() {
			state = ", being uninstalled"
		}
		for _, v := range versions[other.Spec.Extension] {
			if v.Version != other.Status.InstalledVersion {
				continue
			}
			for _, dep := range v.Dependencies {
				if dep.Name == inst.Spec.Extension {
					held = append(held, fmt.Sprintf("%s (%s %s%s)", NameOf(other), other.Spec.Extension, other.Status.InstalledVersion, state))
				}
			}
		}
	}
	sort.Strings(held)
	return held
}

// Present lists the installations on the cluster other than inst that
// can meet a dependency, by extension: an installation being deleted
// still counts (deleting one that others need is held, so it keeps
// running until they are gone); one running a version of its own does
// not.
func Present(c *Cluster, inst *v1alpha1.ExtensionInstallation) map[string][]resolve.Present {
	present := map[string][]resolve.Present{}
	for _, other := range c.Installations {
		if other == inst || c.isInstance(other) {
			continue
		}
		present[other.Spec.Extension] = append(present[other.Spec.Extension], resolve.Present{
			Installation: NameOf(other), Version: other.Status.InstalledVersion, Ready: readiness.IsReady(other),
		})
	}
	return present
}

// An Addition is an installation Annex adds for a dependency of the
// version chosen for another installation.
type Addition struct {
	// Dependency is the chosen version's dependency it meets.
	Dependency v1alpha1.Dependency
	// Installation is the installation to create: labelled as added for
	// dependencies, owned by the installation that needs it, in its
	// namespace and on its cluster, its version constrained by the
	// dependents' ranges in the solver only.
	Installation *v1alpha1.ExtensionInstallation

	dependent *v1alpha1.ExtensionInstallation // the installation that needs it
	version   string                          // the version chosen for dependent
}

// Additions lists the installations to create for the dependencies of
// chosen, the version chosen for inst, that no installation on the
// cluster meets: one of each such dependency, named by
// fleet.InstallationName, installing into targetNamespace. An extension
// of which only instances run does not meet a dependency, so a dependency
// on it gets an installation of its own. c.Resolution must be set.
func Additions(c *Cluster, inst *v1alpha1.ExtensionInstallation, chosen v1alpha1.ExtensionVersion, targetNamespace string) []Addition {
	if len(chosen.Dependencies) == 0 {
		return nil
	}
	present := map[string]bool{}
	for _, other := range c.Installations {
		if !c.isInstance(other) {
			present[other.Spec.Extension] = true
		}
	}
	var out []Addition
	for _, dep := range chosen.Dependencies {
		if present[dep.Name] {
			continue
		}
		out = append(out, Addition{Dependency: dep, dependent: inst, version: chosen.Version, Installation: &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: inst.Namespace,
				Name:      fleet.InstallationName(dep.Name, inst.Spec.Cluster),
				Labels:    map[string]string{v1alpha1.LabelAddedFor: "dependencies"},
				Annotations: map[string]string{
					v1alpha1.AnnotationRequiredBy: fmt.Sprintf("%s (%s %s needs %s %s)", NameOf(inst), inst.Spec.Extension, chosen.Version, dep.Name, rangeOrAny(dep.Version)),
				},
				OwnerReferences: []metav1.OwnerReference{ownerRef(inst)},
			},
			Spec: v1alpha1.ExtensionInstallationSpec{
				Extension:       dep.Name,
				Version:         "*", // the dependents' ranges constrain it in the solver
				Cluster:         inst.Spec.Cluster,
				TargetNamespace: targetNamespace,
			},
		}})
	}
	return out
}

// Taken is why a cannot be created: its name is taken by holder (nil
// when it could not be read), and what to do instead.
func (a Addition) Taken(holder *v1alpha1.ExtensionInstallation) string {
	by := "another installation"
	if holder != nil {
		by = fmt.Sprintf("an installation of %s on %s", holder.Spec.Extension, fleet.ClusterName(holder.Spec.Cluster))
	}
	inst, dep := a.dependent, a.Dependency
	return fmt.Sprintf("%s %s needs %s %s on %s, and the name %s/%s for its installation is taken by %s; "+
		"create an ExtensionInstallation of %s with spec.cluster %q yourself", inst.Spec.Extension, a.version, dep.Name, rangeOrAny(dep.Version),
		fleet.ClusterName(inst.Spec.Cluster), a.Installation.Namespace, a.Installation.Name, by, dep.Name, inst.Spec.Cluster)
}

// rangeOrAny is a dependency's version range as messages show it: "*"
// when it is empty.
func rangeOrAny(r string) string {
	if strings.TrimSpace(r) == "" {
		return "*"
	}
	return r
}

func ownerRef(inst *v1alpha1.ExtensionInstallation) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation", Name: inst.Name, UID: inst.UID}
}

// Owners returns the owner references an installation Annex added for
// dependencies should carry: the installations in its namespace that
// need it (its status.requiredBy), sorted by name, so that on a cluster
// with garbage collection it goes when the last of them goes. change is
// false when there is nothing to write: inst was not added for
// dependencies, no installation in its namespace needs it (its owners
// stay until Annex releases it), or it carries the same owners already.
func Owners(c *Cluster, inst *v1alpha1.ExtensionInstallation) (owners []metav1.OwnerReference, change bool) {
	if inst.Labels[v1alpha1.LabelAddedFor] == "" {
		return nil, false
	}
	for _, other := range c.Installations {
		if other.Namespace == inst.Namespace && slices.Contains(inst.Status.RequiredBy, NameOf(other)) {
			owners = append(owners, ownerRef(other))
		}
	}
	sort.Slice(owners, func(i, j int) bool { return owners[i].Name < owners[j].Name })
	same := slices.EqualFunc(owners, inst.OwnerReferences, func(a, b metav1.OwnerReference) bool { return a.UID == b.UID })
	if len(owners) == 0 || same {
		return nil, false
	}
	return owners, true
}

// CRDSource reads CustomResourceDefinitions from the cluster (the
// installation controller's target.Cluster). Its errors are the
// cluster's.
type CRDSource interface {
	// CRDs reads the CRDs names; a name the cluster has none of is absent
	// from the map.
	CRDs(ctx context.Context, names []string) (map[string]*unstructured.Unstructured, error)
}

// ProvidedAPIs reads which installations on the cluster own the CRDs of
// APIs that the extensions they ask for require
// (resolve.RequiredAPIGroups): for each served version of such a CRD in
// an installation's inventory, "group/version/Kind" → the installation's
// extension (the first installation by name when two list it), as
// resolve.Problem.Provided wants them. It reads nothing, and returns nil,
// when no such extension requires an API or no inventory holds a CRD of a
// required group. Errors are src's, to be retried.
func ProvidedAPIs(ctx context.Context, src CRDSource, c *Cluster) (map[string]string, error) {
	names, owners := requiredCRDs(c)
	if len(names) == 0 {
		return nil, nil
	}
	crds, err := src.CRDs(ctx, names)
	if err != nil {
		return nil, err
	}
	return servedAPIs(crds, owners), nil
}

// requiredCRDs lists the CRDs ProvidedAPIs reads: those of a required
// group in an installation's inventory, in the order of the
// installations' names, and by CRD name the extension of the first
// installation that lists it.
func requiredCRDs(c *Cluster) (names []string, owners map[string]string) {
	groups := resolve.RequiredAPIGroups(c.Extensions, c.asked())
	if len(groups) == 0 {
		return nil, nil
	}
	owners = map[string]string{}
	insts := slices.Clone(c.Installations)
	slices.SortFunc(insts, func(a, b *v1alpha1.ExtensionInstallation) int { return strings.Compare(NameOf(a), NameOf(b)) })
	for _, inst := range insts {
		for _, ref := range inst.Status.Inventory {
			if ref.Kind != "CustomResourceDefinition" || owners[ref.Name] != "" {
				continue
			}
			_, group, _ := strings.Cut(ref.Name, ".")
			if _, found := slices.BinarySearch(groups, group); found {
				owners[ref.Name] = inst.Spec.Extension
				names = append(names, ref.Name)
			}
		}
	}
	return names, owners
}

// servedAPIs turns the CRDs read (by name) into the APIs installations
// provide: for each served version of a CRD, "group/version/Kind" →
// owners[its name].
func servedAPIs(crds map[string]*unstructured.Unstructured, owners map[string]string) map[string]string {
	provided := map[string]string{}
	for name, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			m, _ := v.(map[string]any)
			if served, _ := m["served"].(bool); served {
				version, _ := m["name"].(string)
				provided[group+"/"+version+"/"+kind] = owners[name]
			}
		}
	}
	return provided
}
