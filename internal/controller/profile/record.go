package profile

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"

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

// recordsWritten remembers the records this manager wrote until its
// cache shows them. The cache's ManagedClusters and installations are
// two watches with no order between them: a reconcile right after a move
// can see the installations it wrote and not yet the record written
// after them, and would take the move for one cut short. Only moves in
// flight are kept: an entry goes once the cache has caught up.
type recordsWritten struct {
	mu      sync.Mutex
	records map[recordKey]clusterRecord
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
