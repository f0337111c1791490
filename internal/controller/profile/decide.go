package profile

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/fleet"
)

// hubCluster is how the hub appears among a profile's clusters: the empty
// spec.cluster of an installation, "hub" in labels.
const hubLabelValue = "hub"

// cluster is one cluster a profile may select.
type cluster struct {
	name        string // "" for the hub
	labels      map[string]string
	annotations map[string]string
	version     string // Kubernetes version as last observed; "" when unknown
	// defaults are the extensions each profile has created here in Default
	// mode (by profile name).
	defaults map[string][]string
	// reachable is false while the ManagedCluster's Reachable condition
	// is False; windows are its maintenance windows.
	reachable bool
	windows   []v1alpha1.MaintenanceWindow
	// record is the profile's record of the revision the cluster runs
	// (hasRecord: there is one).
	record    clusterRecord
	hasRecord bool
	// revision is the profile revision the cluster runs and previous the
	// one it ran before (observe), 0 when none; move is the highest move
	// number its record or installations carry.
	revision, previous, move int64
	// unseen is set when the profile wrote one of the cluster's
	// installations and the cache does not show it yet
	// (installationsWritten): the cluster is Progressing until it does.
	unseen bool
}

// revisionView tells decide which revision of the profile each cluster
// is written from: the one it runs, or the one a rollout moves it to.
type revisionView struct {
	data    map[int64]*v1alpha1.ProfileRevisionData
	moves   map[string]int64 // by cluster name
	catalog map[string]*v1alpha1.Extension
	now     time.Time
	// adopt is the revision an installation without a revision label
	// counts as (written before revisions existed).
	adopt int64
	// newest is the revision being rolled out; memo caches the versions
	// each cluster's Kubernetes version gets.
	newest int64
	memo   versionMemo
	// unseen are the installations (by name, in the profile's namespace)
	// this manager wrote and the cache does not show yet
	// (installationsWritten). One created a moment ago and not listed
	// yet is there: it is not created again (the API server would answer
	// AlreadyExists). One deleted and still listed as it was is not
	// deleted again. An update is sent again on a stale object, as
	// before: it is retried on the newer object (act), which the next
	// move may have to change.
	unseen map[string]bool
}

// revisionOf is the revision inst was last written from.
func (v revisionView) revisionOf(inst *v1alpha1.ExtensionInstallation) int64 {
	if n, err := strconv.ParseInt(inst.Labels[v1alpha1.LabelProfileRevision], 10, 64); err == nil {
		return n
	}
	return v.adopt
}

// want is one installation the profile should hold.
type want struct {
	cluster string
	// ext is the revision's extension, its version the one for this
	// cluster.
	ext  v1alpha1.ProfileExtension
	vars clusterVars
	// revision the installation is written from; moved is set when a
	// rollout moves the cluster to it from previous, at now, in the
	// cluster's move numbered move.
	revision, previous, move int64
	moved                    bool
	now                      time.Time
}

// action is one change the profile's decision asks for.
type action struct {
	kind     actionKind
	name     string // installation name
	want     want   // create, update, adopt
	existing *v1alpha1.ExtensionInstallation
	record   clusterRecord // actRecordRevision
}

type actionKind int

const (
	// create the installation of want.
	actCreate actionKind = iota
	// update an Enforced installation whose spec or labels drifted.
	actUpdate
	// remove an installation that left the profile (removalPolicy).
	actRemove
	// remember that a Default extension was created on a cluster.
	actRecordDefault
	// record the revision a rollout moved the cluster to, once the
	// installations the move changes are written (clusterRecord).
	actRecordRevision
	// drop the record of a cluster that holds nothing of the profile.
	actDropRecord
)

// decision is what one reconcile of a profile decides: pure, from values.
type decision struct {
	actions   []action
	matching  int
	conflicts []string // "<extension> on <cluster>: profile <winner>"
	// invalid maps an extension whose values do not expand for some
	// cluster to why; nothing is created or changed for it there.
	invalid map[string]string
	// heldBack are the installations written from the newest revision
	// below its target version, because their cluster's Kubernetes
	// version cannot run it (by cluster, then extension).
	heldBack []v1alpha1.RolloutClusterState
}

// decide compares what profile p should hold with what exists.
// installations are those in p's namespace; all is every profile, for the
// conflict rule; clusters are the ManagedClusters (not being deleted);
// revs says which revision each selected cluster is written from. A
// cluster that runs no revision and is not moved keeps what it has.
func decide(p *v1alpha1.ExtensionProfile, all []v1alpha1.ExtensionProfile, clusters []cluster,
	installations []v1alpha1.ExtensionInstallation, revs revisionView) decision {
	var out decision
	out.invalid = map[string]string{}
	byName := make(map[string]*v1alpha1.ExtensionInstallation, len(installations))
	onCluster := make(map[string][]*v1alpha1.ExtensionInstallation, len(clusters))
	for i := range installations {
		inst := &installations[i]
		byName[inst.Name] = inst
		if inst.Labels[v1alpha1.LabelProfile] == p.Name {
			onCluster[inst.Spec.Cluster] = append(onCluster[inst.Spec.Cluster], inst)
		}
	}
	wanted := make(map[string]bool, len(installations))
	var records []action // after every cluster's other actions
	sel := selectors{}
	for _, c := range clusters {
		if !sel.selects(p, c) {
			continue
		}
		out.matching++
		vars := varsOf(c)
		rev, moved := revs.moves[c.name]
		if !moved {
			rev = c.revision
		}
		data := revs.data[rev]
		if data == nil {
			// Not reached by a rollout yet (or moved to no revision: a
			// first rollout rolled back): what it has stays until moved.
			if !moved {
				for _, inst := range onCluster[c.name] {
					wanted[inst.Name] = true
				}
			}
			continue
		}
		pending := false // an installation created and not listed yet
		for _, rext := range data.Extensions {
			ext := rext.ProfileExtension
			name := fleet.InstallationName(ext.Name, c.name)
			if w := sel.winner(all, c, ext.Name); w != p.Name {
				out.conflicts = append(out.conflicts, ext.Name+" on "+clusterLabel(c.name)+": profile "+w)
				wanted[name] = true // the winner takes it over; it is not removed
				continue
			}
			wanted[name] = true
			existing := byName[name]
			var held string
			ext.Version, held = revs.memo.versionFor(rext, revs.catalog, c.version)
			if held != "" && rev == revs.newest {
				out.heldBack = append(out.heldBack, v1alpha1.RolloutClusterState{Cluster: clusterLabel(c.name), Extension: ext.Name,
					Reason: v1alpha1.ReasonKubernetesVersion, Message: held})
			}
			w := want{cluster: c.name, ext: ext, vars: vars, revision: rev, previous: previousOf(c, rev), move: c.move + 1,
				moved: moved, now: revs.now}
			spec, err := desiredSpec(p, w)
			if err != nil {
				out.invalid[ext.Name] = err.Error() // the same for every cluster: reported once
				continue
			}
			switch {
			case existing == nil && revs.unseen[name]:
				// Created by this manager a moment ago; the cache is
				// behind. The cluster holds it.
				pending = true
			case existing != nil && existing.DeletionTimestamp.IsZero() && existing.Labels[v1alpha1.LabelProfile] != "" &&
				existing.Labels[v1alpha1.LabelProfile] != p.Name:
				// Another profile held it and lost it to this one.
				out.actions = append(out.actions, action{kind: actUpdate, name: name, want: w, existing: existing})
			case existing == nil && ext.Mode == v1alpha1.ProfileModeEnforced:
				out.actions = append(out.actions, action{kind: actCreate, name: name, want: w})
			case existing == nil && !slices.Contains(c.defaults[p.Name], ext.Name):
				out.actions = append(out.actions,
					action{kind: actCreate, name: name, want: w},
					action{kind: actRecordDefault, name: name, want: w})
			case existing == nil:
				// A Default its owners deleted: left deleted.
			case ext.Mode == v1alpha1.ProfileModeEnforced && existing.DeletionTimestamp.IsZero() && !matchesWant(existing, p, spec):
				out.actions = append(out.actions, action{kind: actUpdate, name: name, want: w, existing: existing})
			case ext.Mode != v1alpha1.ProfileModeEnforced && existing.Labels[v1alpha1.LabelProfile] == p.Name &&
				!slices.Contains(c.defaults[p.Name], ext.Name):
				// Created before the record was written (a crash between
				// the two): record it now.
				out.actions = append(out.actions, action{kind: actRecordDefault, name: name, want: w})
			}
			// A Default installation, or an Enforced one the revision
			// leaves as it is, is not written: the cluster's record says
			// which revision it runs.
		}
		if moved && (len(onCluster[c.name]) > 0 || pending || takesOne(out.actions, c.name)) {
			// A cluster left holding nothing of p has no record: it would
			// not be read (observe), and it would be moved again.
			records = append(records, action{kind: actRecordRevision, want: want{cluster: c.name}, record: clusterRecord{
				Revision: rev, Previous: previousOf(c, rev), Move: c.move + 1, At: revs.now}})
		}
	}
	for i := range installations {
		inst := &installations[i]
		if inst.Labels[v1alpha1.LabelProfile] == p.Name && !wanted[inst.Name] && inst.DeletionTimestamp.IsZero() && !revs.unseen[inst.Name] {
			out.actions = append(out.actions, action{kind: actRemove, name: inst.Name, existing: inst})
		}
	}
	out.actions = append(out.actions, records...)
	for _, c := range clusters {
		if c.hasRecord && !sel.selects(p, c) && len(onCluster[c.name]) == 0 {
			// It left the profile and its installations are gone: so goes
			// its record, lest it count if the cluster comes back.
			out.actions = append(out.actions, action{kind: actDropRecord, want: want{cluster: c.name}})
		}
	}
	sort.Strings(out.conflicts)
	return out
}

func revisionLabel(rev int64) string { return strconv.FormatInt(rev, 10) }

// takesOne reports whether the last of actions, those of cluster, create
// an installation there or take one over from another profile.
func takesOne(actions []action, cluster string) bool {
	for i := len(actions) - 1; i >= 0 && actions[i].want.cluster == cluster; i-- {
		if actions[i].kind == actCreate || actions[i].kind == actUpdate {
			return true
		}
	}
	return false
}

// previousOf is the revision c runs before a move to rev: the one it runs
// now, or, when the move finishes a move to rev cut short, the one it ran
// before that.
func previousOf(c cluster, rev int64) int64 {
	if c.revision == rev {
		return c.previous
	}
	return c.revision
}

// selectors holds each profile's cluster selector parsed, by the
// selector's address in the objects one reconcile reads: that reconcile
// asks, for every cluster and extension, which profile gives it
// (winner), and parsing a selector costs far more than matching it.
type selectors map[*metav1.LabelSelector]labels.Selector

// selects reports whether p gives cluster c its extensions.
func (s selectors) selects(p *v1alpha1.ExtensionProfile, c cluster) bool {
	if c.name == "" {
		return p.Spec.IncludeHub
	}
	ls := p.Spec.ClusterSelector
	if ls == nil {
		return false
	}
	sel, ok := s[ls]
	if !ok {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(ls); err != nil {
			sel = labels.Nothing() // refused by the API's validation; selects nothing
		}
		s[ls] = sel
	}
	return sel.Matches(labels.Set(c.labels))
}

// winner is the profile that gives cluster c the extension ext: of those
// that select c and offer ext, the highest priority, then the first name.
func (s selectors) winner(all []v1alpha1.ExtensionProfile, c cluster, ext string) string {
	best := -1
	for i := range all {
		p := &all[i]
		if !p.DeletionTimestamp.IsZero() || !s.selects(p, c) || !slices.ContainsFunc(p.Spec.Extensions, func(e v1alpha1.ProfileExtension) bool { return e.Name == ext }) {
			continue
		}
		if best < 0 || p.Spec.Priority > all[best].Spec.Priority ||
			(p.Spec.Priority == all[best].Spec.Priority && p.Name < all[best].Name) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return all[best].Name
}

// desiredSpec is the spec a profile gives the installation of w, with the
// cluster variables expanded in its values and valuesFrom names.
func desiredSpec(p *v1alpha1.ExtensionProfile, w want) (v1alpha1.ExtensionInstallationSpec, error) {
	values, err := expandValues(w.ext.Values, w.vars)
	if err != nil {
		return v1alpha1.ExtensionInstallationSpec{}, fmt.Errorf("spec.extensions[%s].values: %w", w.ext.Name, err)
	}
	valuesFrom := slices.Clone(w.ext.ValuesFrom)
	for i := range valuesFrom {
		if valuesFrom[i].Name, err = expandString(valuesFrom[i].Name, w.vars); err != nil {
			return v1alpha1.ExtensionInstallationSpec{}, fmt.Errorf("spec.extensions[%s].valuesFrom[%d].name: %w", w.ext.Name, i, err)
		}
	}
	spec := v1alpha1.ExtensionInstallationSpec{
		Extension:       w.ext.Name,
		Version:         w.ext.Version,
		Cluster:         w.cluster,
		TargetNamespace: w.ext.TargetNamespace,
		Values:          values,
		ValuesFrom:      valuesFrom,
	}
	if spec.Version == "" {
		spec.Version = "*"
	}
	// An Enforced profile owns the version: it brings an installation
	// someone moved out of its range back, downgrading if it must.
	spec.Upgrade.AllowDowngrade = w.ext.Mode == v1alpha1.ProfileModeEnforced
	return spec, nil
}

// matchesWant reports whether an installation already is what the profile
// says: its profile label and the fields the profile sets (d, its
// desiredSpec). Its revision label is not compared: an installation a new
// revision leaves as it is is not written at all (the cluster's record
// says which revision it runs).
func matchesWant(inst *v1alpha1.ExtensionInstallation, p *v1alpha1.ExtensionProfile, d v1alpha1.ExtensionInstallationSpec) bool {
	s := inst.Spec
	return inst.Labels[v1alpha1.LabelProfile] == p.Name &&
		s.Extension == d.Extension && s.Version == d.Version && s.Cluster == d.Cluster &&
		s.TargetNamespace == d.TargetNamespace && s.Upgrade.AllowDowngrade == d.Upgrade.AllowDowngrade &&
		equality.Semantic.DeepEqual(s.Values, d.Values) &&
		equality.Semantic.DeepEqual(emptyToNil(s.ValuesFrom), emptyToNil(d.ValuesFrom))
}

func emptyToNil(refs []v1alpha1.ValuesReference) []v1alpha1.ValuesReference {
	if len(refs) == 0 {
		return nil
	}
	return refs
}

func clusterLabel(name string) string {
	if name == "" {
		return hubLabelValue
	}
	return name
}
