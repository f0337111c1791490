package installation

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/fleet"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/resolve"
)

// clusterState is what one reconcile knows of the installation's cluster:
// every installation on it and every Extension on offer. Apart from the
// reconciled installation they are the cache's own objects: never modify
// them.
type clusterState struct {
	installations []*v1alpha1.ExtensionInstallation // same spec.cluster, including the reconciled one
	extensions    []v1alpha1.Extension
	// resolution is the resolver's answer for every installation on the
	// cluster; nil until the resolve step ran (and on uninstall).
	resolution *resolve.Resolution
	// provided are the APIs operators require whose CRDs installations
	// on the cluster own, by extension (resolve.Problem.Provided); nil
	// until the resolve step ran (and on uninstall).
	provided map[string]string
	// asked are the extensions the installations ask for, without
	// repeats; nil until the resolve step ran (then extensionsOf tells).
	asked []string
}

// providedAPIs reads which installations on st's cluster own the CRDs of
// APIs that the extensions they ask for require
// (resolve.RequiredAPIGroups): for each served version of such a CRD in
// an installation's inventory, "group/version/Kind" → the installation's
// extension (the first installation by name when two list it). It reads
// nothing when no such extension requires an API, or no inventory holds
// a CRD of a required group. Errors are the cluster's, retried.
func providedAPIs(ctx context.Context, target Target, st *clusterState) (map[string]string, error) {
	asked := st.asked
	if asked == nil {
		asked = extensionsOf(st.installations)
	}
	groups := resolve.RequiredAPIGroups(st.extensions, asked)
	if len(groups) == 0 {
		return nil, nil
	}
	owner := map[string]string{} // CRD name → extension
	var names []string
	insts := slices.Clone(st.installations)
	slices.SortFunc(insts, func(a, b *v1alpha1.ExtensionInstallation) int { return strings.Compare(nameOf(a), nameOf(b)) })
	for _, inst := range insts {
		for _, ref := range inst.Status.Inventory {
			if ref.Kind != "CustomResourceDefinition" || owner[ref.Name] != "" {
				continue
			}
			_, group, _ := strings.Cut(ref.Name, ".")
			if _, found := slices.BinarySearch(groups, group); found {
				owner[ref.Name] = inst.Spec.Extension
				names = append(names, ref.Name)
			}
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	crds, err := target.CRDs(ctx, names)
	if err != nil {
		return nil, err
	}
	provided := map[string]string{}
	for name, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			m, _ := v.(map[string]any)
			if served, _ := m["served"].(bool); served {
				version, _ := m["name"].(string)
				provided[group+"/"+version+"/"+kind] = owner[name]
			}
		}
	}
	return provided, nil
}

// loadCluster reads the installations on s's cluster and the Extensions.
func (r *Reconciler) loadCluster(ctx context.Context, s *scope) error {
	others, err := r.index.on(s.inst.Spec.Cluster)
	if err != nil {
		return err
	}
	// A read-only view of the cache: copying every Extension on each
	// reconcile would cost more than the rest of it.
	var exts v1alpha1.ExtensionList
	if err := r.Client.List(ctx, &exts, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	st := &clusterState{extensions: exts.Items, installations: make([]*v1alpha1.ExtensionInstallation, 0, len(others)+1)}
	self := false
	for _, other := range others {
		if other.Namespace == s.inst.Namespace && other.Name == s.inst.Name {
			other, self = s.inst, true // the freshest copy, with this reconcile's status
		}
		st.installations = append(st.installations, other)
	}
	if !self { // the cache has not seen it yet, or has seen it go
		st.installations = append(st.installations, s.inst)
	}
	s.cluster = st
	return nil
}

func nameOf(inst *v1alpha1.ExtensionInstallation) string { return inst.Namespace + "/" + inst.Name }

// resolve solves every installation on the cluster together and takes this
// installation's version from the resolution: the cluster's memo answers
// when nothing the solve reads changed since it last solved.
func (r *Reconciler) resolve(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.loadCluster(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	memo := r.memos.Of(s.inst.Spec.Cluster)
	state := memo.Refresh(s.cluster.installations, s.inst)
	s.cluster.asked = state.Asked()
	provided, err := providedAPIs(ctx, s.target, s.cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.cluster.provided = provided
	resolution := memo.Resolve(state, s.inst.Status.ClusterVersion, resolve.CatalogOf(s.cluster.extensions), provided,
		func(problem resolve.Problem) *resolve.Resolution {
			start := time.Now()
			defer func() { metrics.ObserveResolve(time.Since(start)) }()
			return r.Resolver.Solve(s.cluster.extensions, problem)
		})
	s.cluster.resolution = resolution
	s.inst.Status.RequiredBy = requiredBy(s.inst, s.cluster.installations, s.cluster.extensions, s.cluster.provided, resolution)
	if ex := resolution.Failed[nameOf(s.inst)]; ex != nil {
		s.block = terminal(ex.Reason, ex.Message)
		if s.inst.Status.InstalledVersion != "" {
			s.block.message += fmt.Sprintf(" %s %s keeps running as it is.", s.inst.Spec.Extension, s.inst.Status.InstalledVersion)
		}
		setCondition(s.inst, v1alpha1.ConditionResolved, metav1.ConditionFalse, s.block.reason, s.block.message)
		return ctrl.Result{}, nil
	}
	sel, ok := resolution.For(s.inst.Spec.Extension, nameOf(s.inst))
	if !ok {
		return ctrl.Result{}, fmt.Errorf("the resolver chose no version of %s and gave no reason", s.inst.Spec.Extension)
	}
	s.choice = sel
	s.inst.Status.ResolvedVersion = sel.Version.Version
	setCondition(s.inst, v1alpha1.ConditionResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		resolve.ChoiceMessage(s.inst.Spec.Extension, s.inst.Status.ClusterVersion, sel))
	return ctrl.Result{}, nil
}

// requiredBy lists the installations whose chosen version depends on inst's
// extension, sorted. An instance of an extension serves no dependency
// (the shared version does), so nothing requires it.
func requiredBy(inst *v1alpha1.ExtensionInstallation, insts []*v1alpha1.ExtensionInstallation, extensions []v1alpha1.Extension, provided map[string]string, resolution *resolve.Resolution) []string {
	if sel, ok := resolution.For(inst.Spec.Extension, nameOf(inst)); ok && sel.Instance != "" {
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
	for _, other := range insts {
		if other == inst {
			continue
		}
		name := nameOf(other)
		_, isInstance := resolution.Selected[resolve.InstanceKey(other.Spec.Extension, name)]
		if dependentInstances[name] || dependentExts[other.Spec.Extension] && !isInstance {
			out = append(out, name)
			continue
		}
		if resolution.Failed[name] == nil || other.Status.InstalledVersion == "" {
			continue
		}
		if versions == nil {
			versions = resolve.UniverseWithRequirements(extensions, extensionsOf(insts), provided)
		}
		if keepsNeeding(other, versions, inst.Spec.Extension) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// keepsNeeding reports whether other, which no version fits any more,
// keeps running an installed version that depends on extension: what it
// runs still needs its dependencies, though the resolution selects nothing for
// it. versions are the catalogs' versions with their dependencies as the
// resolver sees them (resolve.UniverseWithRequirements).
func keepsNeeding(other *v1alpha1.ExtensionInstallation, versions resolve.Universe, extension string) bool {
	for _, v := range versions[other.Spec.Extension] {
		if v.Version == other.Status.InstalledVersion {
			return slices.ContainsFunc(v.Dependencies, func(d v1alpha1.Dependency) bool { return d.Name == extension })
		}
	}
	return false
}

// extensionsOf lists the extensions installations ask for.
func extensionsOf(insts []*v1alpha1.ExtensionInstallation) []string {
	out := make([]string, 0, len(insts))
	for _, i := range insts {
		out = append(out, i.Spec.Extension)
	}
	return out
}

// releaseIfUnneeded deletes an installation Annex added for dependencies
// once no installation on the cluster needs it any more; its uninstall then
// runs like any other.
func (r *Reconciler) releaseIfUnneeded(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.inst.Labels[v1alpha1.LabelAddedFor] == "" || len(s.inst.Status.RequiredBy) > 0 {
		return ctrl.Result{}, nil
	}
	r.event(s, "Normal", "Released", fmt.Sprintf("no installation on the cluster needs %s any more; uninstalling it", s.inst.Spec.Extension))
	if err := r.Client.Delete(ctx, s.inst); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	s.block = wait(v1alpha1.ReasonUninstalling, fmt.Sprintf("added for dependencies and no longer needed: uninstalling %s", s.inst.Spec.Extension))
	return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
}

// ensureDependencies creates an installation for every dependency of the
// chosen version that nothing on the cluster installs yet. It is labelled
// as added for dependencies and owned by the installations in its namespace
// that need it; Annex removes it when the last of them goes.
func (r *Reconciler) ensureDependencies(ctx context.Context, s *scope) (ctrl.Result, error) {
	if len(s.choice.Version.Dependencies) == 0 {
		return ctrl.Result{}, nil
	}
	// An instance serves no dependency: a dependency on an extension of
	// which only instances run gets an installation of its own.
	present := map[string]bool{}
	for _, other := range s.cluster.installations {
		if sel, ok := s.cluster.resolution.For(other.Spec.Extension, nameOf(other)); !ok || sel.Instance == "" {
			present[other.Spec.Extension] = true
		}
	}
	var created []string
	for _, dep := range s.choice.Version.Dependencies {
		if present[dep.Name] {
			continue
		}
		name := fleet.InstallationName(dep.Name, s.inst.Spec.Cluster)
		added := &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: s.inst.Namespace,
				Name:      name,
				Labels:    map[string]string{v1alpha1.LabelAddedFor: "dependencies"},
				Annotations: map[string]string{
					v1alpha1.AnnotationRequiredBy: fmt.Sprintf("%s (%s %s needs %s %s)", nameOf(s.inst), s.inst.Spec.Extension, s.choice.Version.Version, dep.Name, rangeOrAny(dep.Version)),
				},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation",
					Name: s.inst.Name, UID: s.inst.UID,
				}},
			},
			Spec: v1alpha1.ExtensionInstallationSpec{
				Extension:       dep.Name,
				Version:         "*", // the dependents' ranges constrain it in the solver
				Cluster:         s.inst.Spec.Cluster,
				TargetNamespace: s.targetNamespace(),
			},
		}
		err := r.Client.Create(ctx, added)
		switch {
		case apierrors.IsAlreadyExists(err):
			s.block = terminal(v1alpha1.ReasonDependencyNotReady, fmt.Sprintf(
				"%s %s needs %s %s on %s, and the name %s/%s for its installation is taken by %s; "+
					"create an ExtensionInstallation of %s with spec.cluster %q yourself", s.inst.Spec.Extension, s.choice.Version.Version,
				dep.Name, rangeOrAny(dep.Version), clusterName(s.inst.Spec.Cluster), s.inst.Namespace, name,
				r.describeTaken(ctx, s.inst.Namespace, name), dep.Name, s.inst.Spec.Cluster))
			return ctrl.Result{}, nil
		case err != nil:
			return ctrl.Result{}, err
		}
		created = append(created, name)
	}
	if len(created) > 0 {
		r.event(s, "Normal", "DependenciesAdded", fmt.Sprintf("added installations for %s", strings.Join(created, ", ")))
	}
	return ctrl.Result{}, nil
}

// clusterName names a cluster in messages.
func clusterName(cluster string) string {
	if cluster == "" {
		return "the hub cluster"
	}
	return "cluster " + cluster
}

// describeTaken says what holds the name of an installation Annex wanted
// to add: an installation of which extension, on which cluster.
func (r *Reconciler) describeTaken(ctx context.Context, namespace, name string) string {
	other := &v1alpha1.ExtensionInstallation{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, other); err != nil {
		return "another installation"
	}
	return fmt.Sprintf("an installation of %s on %s", other.Spec.Extension, clusterName(other.Spec.Cluster))
}

func rangeOrAny(r string) string {
	if strings.TrimSpace(r) == "" {
		return "*"
	}
	return r
}

// syncOwners keeps an added dependency owned by the installations in its
// namespace that need it, so that on a cluster with garbage collection it
// goes when the last of them goes (Annex also releases it itself).
func (r *Reconciler) syncOwners(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.inst.Labels[v1alpha1.LabelAddedFor] == "" {
		return ctrl.Result{}, nil
	}
	var owners []metav1.OwnerReference
	for _, other := range s.cluster.installations {
		if other.Namespace != s.inst.Namespace || !contains(s.inst.Status.RequiredBy, nameOf(other)) {
			continue
		}
		owners = append(owners, metav1.OwnerReference{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation", Name: other.Name, UID: other.UID,
		})
	}
	sort.Slice(owners, func(i, j int) bool { return owners[i].Name < owners[j].Name })
	if len(owners) == 0 || equalOwners(owners, s.inst.OwnerReferences) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.patchMeta(ctx, s, func() { s.inst.OwnerReferences = owners })
}

func equalOwners(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].UID != b[i].UID {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// heldBy lists the installations that still use inst's extension: their
// installed version depends on it and no other live installation of the
// extension remains (one that runs as an instance serves the dependents
// as soon as the resolver finds it can, or Annex adds one that does).
// Deleting inst waits until they are gone.
func heldBy(inst *v1alpha1.ExtensionInstallation, st *clusterState) []string {
	for _, other := range st.installations {
		if other != inst && other.Spec.Extension == inst.Spec.Extension && other.DeletionTimestamp.IsZero() {
			return nil
		}
	}
	// The dependencies as the resolver sees them: an operator's required
	// APIs hold the extension that provides them.
	versions := resolve.UniverseWithRequirements(st.extensions, extensionsOf(st.installations), st.provided)
	var held []string
	for _, other := range st.installations {
		if other == inst || other.Status.InstalledVersion == "" {
			continue
		}
		for _, v := range versions[other.Spec.Extension] {
			if v.Version != other.Status.InstalledVersion {
				continue
			}
			for _, dep := range v.Dependencies {
				if dep.Name == inst.Spec.Extension {
					state := ""
					if !other.DeletionTimestamp.IsZero() {
						state = ", being uninstalled"
					}
					held = append(held, fmt.Sprintf("%s (%s %s%s)", nameOf(other), other.Spec.Extension, other.Status.InstalledVersion, state))
				}
			}
		}
	}
	sort.Strings(held)
	return held
}
