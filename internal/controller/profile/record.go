package profile

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// clusterRecord is a profile's record of the revision a cluster runs,
// kept in the annotation revisions.profiles.annex.dev/<profile> of its
// ManagedCluster (of the profile, for the hub).
//
// A rollout's move to a revision writes only the installations whose
// spec changes (each stamped with the move's number), then this record:
// a move of one extension on a cluster of ten costs two writes, not ten.
// Installations stamped with a move numbered above Move were written by
// a move cut short before its record (observe).
type clusterRecord struct {
	// Revision the cluster runs, and Previous the one it ran before.
	Revision int64 `json:"revision"`
	Previous int64 `json:"previous,omitempty"`
	// Move numbers the move that wrote this record.
	Move int64 `json:"move"`
	// At is when that move was made: a step's timeout counts from there.
	At time.Time `json:"at"`
}

// recordIn reads profile's record from annotations; ok is false when
// there is none, or it does not parse (then the installations' labels
// say, as before records existed).
func recordIn(annotations map[string]string, profile string) (rec clusterRecord, ok bool) {
	v, found := annotations[v1alpha1.AnnotationProfileRevisionsPrefix+profile]
	if !found || json.Unmarshal([]byte(v), &rec) != nil || rec.Revision < 0 || rec.Move < 0 {
		return clusterRecord{}, false
	}
	return rec, true
}

// encode is the record as its annotation's value.
func (rec clusterRecord) encode() string {
	rec.At = rec.At.UTC().Truncate(time.Second)
	b, _ := json.Marshal(rec) // a struct of numbers and a time: cannot fail
	return string(b)
}

// moveOf is the number of the move that last wrote inst, 0 for none.
func moveOf(annotations map[string]string) int64 {
	n, err := strconv.ParseInt(annotations[v1alpha1.AnnotationProfileMove], 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// notes are what one reconcile's record actions change of a cluster's
// record object (its ManagedCluster, or the profile for the hub): the
// Default extensions the profile created there and the record of the
// revision the cluster runs, both annotations, written in one patch
// after the cluster's installations (writeNotes) rather than one write
// per action.
type notes struct {
	profile     string
	annotations map[string]string // the object's, with the notes taken
	// defaultsAdded, recorded and dropped say what was taken.
	defaultsAdded bool
	recorded      *clusterRecord
	dropped       bool
}

// notesOf starts the notes of profile on obj, from its annotations with
// the Default extensions as the profile knows them (defaults: the
// cache's, with those it wrote since; recordsWritten.defaults), so that
// a Default added now keeps the ones written before the cache showed
// them.
func notesOf(profile string, obj client.Object, defaults []string) *notes {
	n := &notes{profile: profile, annotations: maps.Clone(obj.GetAnnotations())}
	if len(defaults) > 0 {
		n.set(v1alpha1.AnnotationProfileDefaultsPrefix+profile, strings.Join(defaults, ","))
	}
	return n
}

// take notes a record action and reports true; any other action it
// leaves alone and reports false.
func (n *notes) take(a action) bool {
	switch a.kind {
	case actRecordDefault:
		have := defaultsIn(n.annotations, n.profile)
		if slices.Contains(have, a.want.ext.Name) {
			return true
		}
		have = append(have, a.want.ext.Name)
		slices.Sort(have)
		n.set(v1alpha1.AnnotationProfileDefaultsPrefix+n.profile, strings.Join(have, ","))
		n.defaultsAdded = true
	case actRecordRevision:
		rec := a.record
		n.set(v1alpha1.AnnotationProfileRevisionsPrefix+n.profile, rec.encode())
		n.recorded, n.dropped = &rec, false
	case actDropRecord:
		if _, ok := n.annotations[v1alpha1.AnnotationProfileRevisionsPrefix+n.profile]; ok {
			delete(n.annotations, v1alpha1.AnnotationProfileRevisionsPrefix+n.profile)
			n.recorded, n.dropped = nil, true
		}
	default:
		return false
	}
	return true
}

func (n *notes) set(key, value string) {
	if n.annotations == nil {
		n.annotations = map[string]string{}
	}
	n.annotations[key] = value
}

// changed reports whether the notes change the object's annotations.
func (n *notes) changed() bool { return n.defaultsAdded || n.recorded != nil || n.dropped }

// recordsWritten remembers the records this manager wrote until its
// cache shows them. The cache's ManagedClusters and installations are
// two watches with no order between them: a reconcile right after a move
// can see the installations it wrote and not yet the record written
// after them, and would take the move for one cut short. Only moves in
// flight are kept: an entry goes once the cache has caught up.
type recordsWritten struct {
	mu            sync.Mutex
	records       map[recordKey]clusterRecord
	defaultsLists map[recordKey]defaultsWritten
}

// defaultsWritten is a record of Default extensions written at a time.
type defaultsWritten struct {
	extensions []string
	at         time.Time
}

type recordKey struct{ profile, cluster string }

// add remembers rec, written for profile on cluster.
func (w *recordsWritten) add(profile, cluster string, rec clusterRecord) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.records == nil {
		w.records = map[recordKey]clusterRecord{}
	}
	w.records[recordKey{profile, cluster}] = rec
}

// forget drops what was written for profile on cluster.
func (w *recordsWritten) forget(profile, cluster string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.records, recordKey{profile, cluster})
}

// newest is profile's record of cluster: the one in annotations (the
// cache's), or the one written since if the cache does not show it yet.
func (w *recordsWritten) newest(profile, cluster string, annotations map[string]string) (clusterRecord, bool) {
	rec, ok := recordIn(annotations, profile)
	w.mu.Lock()
	defer w.mu.Unlock()
	key := recordKey{profile, cluster}
	mine, wrote := w.records[key]
	switch {
	case !wrote:
		return rec, ok
	case ok && rec.Move >= mine.Move:
		delete(w.records, key)
		return rec, ok
	}
	return mine, true
}

// installationsWritten remembers the installations this manager wrote
// (created, updated, deleted) until its cache shows the write: the same
// race as recordsWritten's, the other way round. A reconcile right after
// a move can see the cluster's record (the cache's, or the one
// recordsWritten remembers) and not yet the installations written
// before it; the cluster's old installations, Ready at their old
// generation, would then pass for the new revision being Ready, and a
// step be judged done before its clusters ran it. A cluster with a write
// the cache does not show is Progressing (observe), and an installation
// created or deleted is not created or deleted again (decide): to a
// reconcile whose cache is behind its own creates, an installation created
// a moment ago looks missing, and creating it again only buys an
// AlreadyExists (318 of them in a two-shard fleet simulation of 10,000
// installations). Only writes in flight are kept: an entry goes once the
// cache shows it, or after writeSeenWithin if it never does (its object
// was deleted meanwhile).
type installationsWritten struct {
	mu     sync.Mutex
	writes map[string]map[types.NamespacedName]installationWrite // by profile
}

// installationWrite is one write of an installation on cluster: a create
// or update that left it at generation, or (generation 0) a deletion of
// the object with uid.
type installationWrite struct {
	cluster    string
	generation int64
	uid        types.UID
	at         time.Time
}

// writeSeenWithin bounds how long a write waits for the cache to show it.
// Informers show a write within a second or two; a write never shown is
// one whose object went meanwhile.
const writeSeenWithin = 2 * time.Minute

// wrote remembers that profile created or updated inst at now (inst is
// the object the API server returned, with its generation).
func (w *installationsWritten) wrote(profile string, inst *v1alpha1.ExtensionInstallation, now time.Time) {
	w.add(profile, inst, installationWrite{cluster: inst.Spec.Cluster, generation: max(inst.Generation, 1), at: now})
}

// deleted remembers that profile deleted inst at now.
func (w *installationsWritten) deleted(profile string, inst *v1alpha1.ExtensionInstallation, now time.Time) {
	w.add(profile, inst, installationWrite{cluster: inst.Spec.Cluster, uid: inst.UID, at: now})
}

func (w *installationsWritten) add(profile string, inst *v1alpha1.ExtensionInstallation, write installationWrite) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.writes == nil {
		w.writes = map[string]map[types.NamespacedName]installationWrite{}
	}
	if w.writes[profile] == nil {
		w.writes[profile] = map[types.NamespacedName]installationWrite{}
	}
	w.writes[profile][types.NamespacedName{Namespace: inst.Namespace, Name: inst.Name}] = write
}

// unseen returns the installations profile wrote that installations
// (the cache's list of the profile's namespace) do not show yet, each with
// its cluster, and forgets the writes they show.
func (w *installationsWritten) unseen(profile string, installations []v1alpha1.ExtensionInstallation, now time.Time) map[types.NamespacedName]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	writes := w.writes[profile]
	if len(writes) == 0 {
		return nil
	}
	cached := make(map[types.NamespacedName]*v1alpha1.ExtensionInstallation, len(writes))
	for i := range installations {
		key := types.NamespacedName{Namespace: installations[i].Namespace, Name: installations[i].Name}
		if _, ok := writes[key]; ok {
			cached[key] = &installations[i]
		}
	}
	var out map[types.NamespacedName]string
	for key, write := range writes {
		if write.shownBy(cached[key]) || now.Sub(write.at) > writeSeenWithin {
			delete(writes, key)
			continue
		}
		if out == nil {
			out = map[types.NamespacedName]string{}
		}
		out[key] = write.cluster
	}
	if len(writes) == 0 {
		delete(w.writes, profile)
	}
	return out
}

// shownBy reports whether cached, the cache's object of the written
// installation (nil when the cache has none), shows the write.
func (write installationWrite) shownBy(cached *v1alpha1.ExtensionInstallation) bool {
	if write.generation == 0 { // a deletion
		return cached == nil || cached.UID != write.uid || !cached.DeletionTimestamp.IsZero()
	}
	return cached != nil && cached.Generation >= write.generation
}

// addDefaults remembers the Default extensions written for profile on
// cluster.
func (w *recordsWritten) addDefaults(profile, cluster string, extensions []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.defaultsLists == nil {
		w.defaultsLists = map[recordKey]defaultsWritten{}
	}
	w.defaultsLists[recordKey{profile, cluster}] = defaultsWritten{extensions: extensions, at: time.Now()}
}

// defaults is profile's record of the Default extensions it created on
// cluster: the one in annotations (the cache's), with those written since
// that the cache does not show yet. A write the cache shows, or has not
// shown within writeSeenWithin, is forgotten.
func (w *recordsWritten) defaults(profile, cluster string, annotations map[string]string) []string {
	have := defaultsIn(annotations, profile)
	w.mu.Lock()
	defer w.mu.Unlock()
	key := recordKey{profile, cluster}
	mine, wrote := w.defaultsLists[key]
	if !wrote {
		return have
	}
	missing := slices.DeleteFunc(slices.Clone(mine.extensions), func(ext string) bool { return slices.Contains(have, ext) })
	if len(missing) == 0 || time.Since(mine.at) > writeSeenWithin {
		delete(w.defaultsLists, key)
		return have
	}
	out := append(slices.Clone(have), missing...)
	slices.Sort(out)
	return out
}
