package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/shard"
)

// StatusFilter narrows Status. Empty fields match everything.
type StatusFilter struct {
	// Namespace of the installations.
	Namespace string
	// Name of an installation (in any namespace unless Namespace is set).
	Name string
	// Cluster is a ManagedCluster name, or HubCluster for the hub.
	Cluster string
}

// HubCluster names the hub cluster in a StatusFilter and in tables; an
// installation's spec.cluster is "" for it.
const HubCluster = "(hub)"

// StatusTree is the state of every installation, per cluster.
type StatusTree struct {
	// Clusters: the hub first, then ManagedClusters by name (NarrowFleet
	// puts the clusters that need a person first).
	Clusters []ClusterStatus `json:"clusters"`
	// Total and Ready count the installations listed.
	Total int `json:"total"`
	Ready int `json:"ready"`
	// Summary counts the clusters a selector picked, before a state
	// filter and a limit; NarrowFleet sets it.
	Summary *FleetSummary `json:"summary,omitempty"`
	// Unlisted counts the clusters a limit left out (LimitClusters).
	Unlisted int `json:"unlisted,omitempty"`
}

// ClusterStatus is one cluster and its installations.
type ClusterStatus struct {
	// Name is the ManagedCluster's, or HubCluster.
	Name string `json:"name"`
	Hub  bool   `json:"hub,omitempty"`
	// KubernetesVersion is what the cluster's API server reports
	// (for the hub: what its installations saw).
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Labels are the ManagedCluster's (the hub has none), which a
	// FleetQuery's selector matches.
	Labels map[string]string `json:"labels,omitempty"`
	// Reachable is the ManagedCluster's Reachable condition (Unknown for
	// the hub, which Annex reaches as it runs there), Message its message
	// when not True.
	Reachable metav1.ConditionStatus `json:"reachable"`
	Message   string                 `json:"message,omitempty"`
	// Shard is the shard of managers the cluster belongs to (its
	// annex.dev/shard label); empty for the default shard.
	Shard string `json:"shard,omitempty"`
	// Handover says that the shard serving the cluster is not yet its own
	// (status.shard): the cluster is being handed over.
	Handover string `json:"handover,omitempty"`
	Total    int    `json:"total"`
	Ready    int    `json:"ready"`
	// Installations sorted by namespace and name (NarrowFleet puts the
	// ones that are not Ready first).
	Installations []InstallationStatus `json:"installations"`
}

// InstallationStatus is one installation in the status tree.
type InstallationStatus struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Extension string `json:"extension"`
	// Range is spec.version.
	Range string `json:"range,omitempty"`
	// Installed is the version whose objects are applied; Resolved the
	// version Annex chose (they differ during an upgrade).
	Installed string `json:"installed,omitempty"`
	Resolved  string `json:"resolved,omitempty"`
	// Ready is the Ready condition's status for the current generation
	// (Unknown until Annex has looked at it).
	Ready    metav1.ConditionStatus `json:"ready"`
	Progress Progress               `json:"progress"`
	// Dependencies of the installed (else resolved) version, each with
	// the installation on the same cluster that provides it.
	Dependencies []DependencyStatus `json:"dependencies,omitempty"`
	// RequiredBy are the installations that depend on this one.
	RequiredBy []string `json:"requiredBy,omitempty"`
	// Action is the first reason a person can act on, and what to do:
	// its own when it stopped, else that of a dependency it waits for,
	// else "" (it is healthy, or moving on its own).
	Action string `json:"action,omitempty"`
	// AdoptedFrom says what the installation took over in place
	// (status.adoptedFrom), e.g. "Helm release team-a/web revision 3".
	AdoptedFrom string `json:"adoptedFrom,omitempty"`
	// AddedFor is set on installations Annex added for dependencies.
	AddedFor string    `json:"addedFor,omitempty"`
	Created  time.Time `json:"created"`
}

// DependencyStatus is one dependency of an installation.
type DependencyStatus struct {
	Extension string `json:"extension"`
	Range     string `json:"range,omitempty"`
	// Installation is "namespace/name" of the installation on the same
	// cluster that provides it; "" when there is none.
	Installation string                 `json:"installation,omitempty"`
	Version      string                 `json:"version,omitempty"`
	Ready        metav1.ConditionStatus `json:"ready"`
}

// Status reads the fleet with three LISTs sent at once — ManagedClusters,
// ExtensionInstallations (of f.Namespace) and Extensions — never a GET
// per object, and builds the tree (BuildStatus). c may be a client or a
// cache-backed reader (the console's informers).
func Status(ctx context.Context, c client.Reader, f StatusFilter) (*StatusTree, error) {
	var (
		clusters v1alpha1.ManagedClusterList
		insts    v1alpha1.ExtensionInstallationList
		exts     v1alpha1.ExtensionList
		wg       sync.WaitGroup
		errs     [3]error
	)
	wg.Go(func() { errs[0] = wrapList("ManagedClusters", c.List(ctx, &clusters)) })
	wg.Go(func() {
		errs[1] = wrapList("ExtensionInstallations", c.List(ctx, &insts, client.InNamespace(f.Namespace)))
	})
	wg.Go(func() { errs[2] = wrapList("Extensions", c.List(ctx, &exts)) })
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	tree := BuildStatus(clusters.Items, insts.Items, exts.Items, f)
	if f.Name != "" && tree.Total == 0 {
		where := "any namespace"
		if f.Namespace != "" {
			where = "namespace " + f.Namespace
		}
		return nil, fmt.Errorf("no ExtensionInstallation %q in %s; run annexctl status to list them", f.Name, where)
	}
	return tree, nil
}

func wrapList(kind string, err error) error {
	if err != nil {
		return fmt.Errorf("listing %s: %w", kind, err)
	}
	return nil
}

// BuildStatus builds the status tree from objects already read; pure.
// Dependencies and actions are worked out over every installation given,
// then f narrows what is listed. A ManagedCluster with no installation
// is listed unless f names an installation; the hub is listed when it
// has installations or no ManagedCluster exists.
func BuildStatus(clusters []v1alpha1.ManagedCluster, insts []v1alpha1.ExtensionInstallation, exts []v1alpha1.Extension, f StatusFilter) *StatusTree {
	extByName := make(map[string]*v1alpha1.Extension, len(exts))
	for i := range exts {
		extByName[exts[i].Name] = &exts[i]
	}
	// byCluster indexes installations by cluster and extension, for
	// dependencies.
	byCluster := map[string]map[string][]*v1alpha1.ExtensionInstallation{}
	for i := range insts {
		in := &insts[i]
		m := byCluster[in.Spec.Cluster]
		if m == nil {
			m = map[string][]*v1alpha1.ExtensionInstallation{}
			byCluster[in.Spec.Cluster] = m
		}
		m[in.Spec.Extension] = append(m[in.Spec.Extension], in)
	}
	b := &builder{exts: extByName, byCluster: byCluster, nodes: map[*v1alpha1.ExtensionInstallation]*InstallationStatus{}}

	tree := &StatusTree{Clusters: []ClusterStatus{}}
	index := map[string]int{}
	addCluster := func(cs ClusterStatus) {
		index[cs.Name] = len(tree.Clusters)
		tree.Clusters = append(tree.Clusters, cs)
	}
	wantCluster := func(name string) bool { return f.Cluster == "" || f.Cluster == name }
	hubListed := len(clusters) == 0 || len(byCluster[""]) > 0
	if hubListed && wantCluster(HubCluster) {
		addCluster(ClusterStatus{Name: HubCluster, Hub: true, Reachable: metav1.ConditionUnknown, Installations: []InstallationStatus{}})
	}
	// ManagedClusters by name (WriteStatus groups them by shard).
	sorted := append([]v1alpha1.ManagedCluster(nil), clusters...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, mc := range sorted {
		if !wantCluster(mc.Name) {
			continue
		}
		cs := ClusterStatus{Name: mc.Name, KubernetesVersion: mc.Status.KubernetesVersion, Labels: mc.Labels,
			Reachable: metav1.ConditionUnknown, Installations: []InstallationStatus{},
			Shard: shardOf(&mc), Handover: handoverOf(&mc)}
		if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReachable); c != nil {
			cs.Reachable = c.Status
			if c.Status != metav1.ConditionTrue {
				cs.Message = c.Message
			}
		}
		addCluster(cs)
	}
	order := make([]*v1alpha1.ExtensionInstallation, 0, len(insts))
	for i := range insts {
		order = append(order, &insts[i])
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].Namespace != order[j].Namespace {
			return order[i].Namespace < order[j].Namespace
		}
		return order[i].Name < order[j].Name
	})
	for _, in := range order {
		if (f.Namespace != "" && in.Namespace != f.Namespace) || (f.Name != "" && in.Name != f.Name) {
			continue
		}
		name := in.Spec.Cluster
		if name == "" {
			name = HubCluster
		}
		if !wantCluster(name) {
			continue
		}
		i, ok := index[name]
		if !ok {
			// An installation for a cluster that is not registered: list
			// the cluster so that the installation shows, with its reason.
			addCluster(ClusterStatus{Name: name, Hub: name == HubCluster, Reachable: metav1.ConditionUnknown,
				Message: "no ManagedCluster of this name", Installations: []InstallationStatus{}})
			i = index[name]
		}
		node := *b.node(in)
		cs := &tree.Clusters[i]
		cs.Installations = append(cs.Installations, node)
		cs.Total++
		tree.Total++
		if node.Ready == metav1.ConditionTrue {
			cs.Ready++
			tree.Ready++
		}
		if cs.Hub && cs.KubernetesVersion == "" {
			cs.KubernetesVersion = in.Status.ClusterVersion
		}
	}
	if f.Name != "" {
		// Naming an installation lists only the clusters it is on.
		kept := tree.Clusters[:0]
		for _, cs := range tree.Clusters {
			if cs.Total > 0 {
				kept = append(kept, cs)
			}
		}
		tree.Clusters = kept
	}
	return tree
}

// shardOf is the cluster's shard as ClusterStatus.Shard says it: empty
// for the default shard.
func shardOf(mc *v1alpha1.ManagedCluster) string {
	if s := shard.Of(mc.Labels); s != shard.Default {
		return s
	}
	return ""
}

// handoverOf describes a cluster that its own shard does not serve yet:
// another shard still does (it finishes its work there first), or nobody
// does (its shard claims it). A cluster of the default shard that no
// shard has claimed yet is not described: so are all of them before the
// first manager that shards runs.
func handoverOf(mc *v1alpha1.ManagedCluster) string {
	own, serving := shard.Of(mc.Labels), mc.Status.Shard
	switch {
	case serving == own || (serving == "" && own == shard.Default):
		return ""
	case serving == "":
		return "not served yet: shard " + own + " claims it"
	default:
		return "served by shard " + serving + " until it hands the cluster over to shard " + own
	}
}

// builder computes installation nodes once each, following dependencies
// for actions.
type builder struct {
	exts      map[string]*v1alpha1.Extension
	byCluster map[string]map[string][]*v1alpha1.ExtensionInstallation
	nodes     map[*v1alpha1.ExtensionInstallation]*InstallationStatus
}

// maxActionDepth bounds how far an action is looked for down the
// dependencies (a cycle is reported by the resolver, not followed).
const maxActionDepth = 8

func (b *builder) node(in *v1alpha1.ExtensionInstallation) *InstallationStatus {
	return b.nodeAt(in, 0)
}

func (b *builder) nodeAt(in *v1alpha1.ExtensionInstallation, depth int) *InstallationStatus {
	if n, ok := b.nodes[in]; ok {
		return n
	}
	p := ProgressOf(in)
	n := &InstallationStatus{
		Namespace: in.Namespace, Name: in.Name, Extension: in.Spec.Extension, Range: in.Spec.Version,
		Installed: in.Status.InstalledVersion, Resolved: in.Status.ResolvedVersion,
		Ready: metav1.ConditionUnknown, Progress: p, RequiredBy: in.Status.RequiredBy,
		AddedFor: in.Labels[v1alpha1.LabelAddedFor], Created: in.CreationTimestamp.Time,
	}
	if a := in.Status.AdoptedFrom; a != nil {
		n.AdoptedFrom = adoptedFromText(a)
	}
	if ready := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionReady); ready != nil && ready.ObservedGeneration >= in.Generation {
		n.Ready = ready.Status
	}
	// Mark before following dependencies, so that a cycle ends here.
	b.nodes[in] = n
	n.Dependencies = b.dependencies(in)
	n.Action = b.action(in, n, depth)
	return n
}

// dependencies of the installed version, else the resolved one.
func (b *builder) dependencies(in *v1alpha1.ExtensionInstallation) []DependencyStatus {
	ext := b.exts[in.Spec.Extension]
	version := in.Status.InstalledVersion
	if in.Status.ResolvedVersion != "" {
		version = in.Status.ResolvedVersion
	}
	if ext == nil || version == "" {
		return nil
	}
	var deps []v1alpha1.Dependency
	for _, v := range ext.Spec.Versions {
		if v.Version == version {
			deps = v.Dependencies
			break
		}
	}
	out := make([]DependencyStatus, 0, len(deps))
	for _, d := range deps {
		ds := DependencyStatus{Extension: d.Name, Range: d.Version, Ready: metav1.ConditionUnknown}
		if provider := b.provider(in, d.Name); provider != nil {
			ds.Installation = provider.Namespace + "/" + provider.Name
			ds.Version = provider.Status.InstalledVersion
			if ready := meta.FindStatusCondition(provider.Status.Conditions, v1alpha1.ConditionReady); ready != nil && ready.ObservedGeneration >= provider.Generation {
				ds.Ready = ready.Status
			}
		}
		out = append(out, ds)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Extension < out[j].Extension })
	return out
}

// provider is the installation of extension on in's cluster that serves
// in: one in its own namespace first, else the first by namespace/name.
func (b *builder) provider(in *v1alpha1.ExtensionInstallation, extension string) *v1alpha1.ExtensionInstallation {
	var best *v1alpha1.ExtensionInstallation
	for _, p := range b.byCluster[in.Spec.Cluster][extension] {
		switch {
		case p.Namespace == in.Namespace && (best == nil || best.Namespace != in.Namespace || p.Name < best.Name):
			best = p
		case best == nil || (best.Namespace != in.Namespace && p.Namespace+"/"+p.Name < best.Namespace+"/"+best.Name):
			best = p
		}
	}
	return best
}

// action is the first reason a person can act on.
func (b *builder) action(in *v1alpha1.ExtensionInstallation, n *InstallationStatus, depth int) string {
	p := n.Progress
	switch p.State {
	case ProgressDone, ProgressSuspended:
		if d := len(in.Status.Drifted); d > 0 && in.Spec.DriftDetection == v1alpha1.DriftDetectionWarn {
			return fmt.Sprintf("%d objects drifted from the installed revision (driftDetection: Warn); see kubectl get extensioninstallation %s -n %s -o yaml (status.drifted)", d, in.Name, in.Namespace)
		}
		return ""
	case ProgressApprovalPending:
		return p.Reason + ": " + withApproveAdvice(p.Message, in.Namespace, in.Name)
	case ProgressFailed:
		return p.Reason + ": " + p.Message
	}
	if p.Reason == v1alpha1.ReasonDependencyNotReady && depth < maxActionDepth {
		for _, d := range n.Dependencies {
			if d.Ready == metav1.ConditionTrue || d.Installation == "" {
				continue
			}
			for _, dep := range b.byCluster[in.Spec.Cluster][d.Extension] {
				if dep.Namespace+"/"+dep.Name != d.Installation {
					continue
				}
				if a := b.nodeAt(dep, depth+1).Action; a != "" {
					return "dependency " + d.Installation + ": " + a
				}
			}
		}
	}
	if in.Status.FailedTarget != nil && in.Status.FailedTarget.Generation == in.Generation {
		return in.Status.FailedTarget.Message
	}
	return ""
}

// withApproveAdvice adds to an approval message how to approve, unless
// it says so already (Annex's own messages do).
func withApproveAdvice(msg, namespace, name string) string {
	if strings.Contains(msg, "annexctl approve") {
		return msg
	}
	return fmt.Sprintf("%s; someone other than its requester runs: annexctl approve %s -n %s", msg, name, namespace)
}

// adoptedFromText is status.adoptedFrom for people: "Helm release
// team-a/web revision 3 (web 1.2.0)", "OLM Subscription operators/memcached
// (memcached-operator 0.1.0, ClusterServiceVersion memcached-operator.v0.1.0)".
func adoptedFromText(a *v1alpha1.AdoptedFrom) string {
	if a.Kind == "Subscription" {
		return fmt.Sprintf("OLM Subscription %s/%s (%s %s, ClusterServiceVersion %s)", a.Namespace, a.Name, a.Chart, a.Version, a.ClusterServiceVersion)
	}
	what := a.Kind
	if a.Kind == "HelmRelease" {
		what = "Helm release"
	}
	return fmt.Sprintf("%s %s/%s revision %d (%s %s)", what, a.Namespace, a.Name, a.Revision, a.Chart, a.Version)
}
