package profile

import (
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// TestInstallationsWritten keeps a cluster unseen while the cache's list
// does not show a write the profile made there: an update until the
// written generation, a create until the object, a deletion until it is
// gone or deleting; a write shown is forgotten, and one never shown is
// forgotten after writeSeenWithin.
func TestInstallationsWritten(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	object := func(name, cluster string, generation int64) v1alpha1.ExtensionInstallation {
		i := inst(name, "base", cluster, "a")
		i.Generation, i.UID = generation, types.UID("uid-"+name)
		return i
	}
	clusters := func(m map[types.NamespacedName]string) []string { return slices.Compact(slices.Sorted(maps.Values(m))) }

	var w installationsWritten
	updated := object("a-edge", "edge", 3)
	w.wrote("base", &updated, now)
	created := object("a-core", "core", 1)
	w.wrote("base", &created, now)
	gone := object("a-far", "far", 2)
	w.deleted("base", &gone, now)
	other := object("a-else", "else", 1)
	w.wrote("other", &other, now)

	before := []v1alpha1.ExtensionInstallation{object("a-edge", "edge", 2), object("a-far", "far", 2)}
	unseen := w.unseen("base", before, now)
	if got := clusters(unseen); !slices.Equal(got, []string{"core", "edge", "far"}) {
		t.Fatalf("before the cache shows anything: unseen %v, want core, edge, far", got)
	}
	// Each write is named, for decide not to write it again.
	for _, name := range []string{"a-core", "a-edge", "a-far"} {
		if _, ok := unseen[types.NamespacedName{Name: name}]; !ok {
			t.Errorf("before the cache shows anything: unseen %v, want %s among them", unseen, name)
		}
	}
	deleting := object("a-far", "far", 2)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	partly := []v1alpha1.ExtensionInstallation{object("a-edge", "edge", 3), deleting}
	if got := clusters(w.unseen("base", partly, now)); !slices.Equal(got, []string{"core"}) {
		t.Fatalf("update and deletion shown: unseen %v, want core (its create is not)", got)
	}
	// What was shown is forgotten: the old objects no longer hold it back.
	if got := clusters(w.unseen("base", before, now)); !slices.Equal(got, []string{"core"}) {
		t.Fatalf("after the writes shown were forgotten: unseen %v, want core", got)
	}
	if got := w.unseen("base", nil, now.Add(writeSeenWithin+time.Second)); got != nil {
		t.Fatalf("a write never shown within %s: unseen %v, want none", writeSeenWithin, got)
	}
	if got := clusters(w.unseen("other", nil, now)); !slices.Equal(got, []string{"else"}) {
		t.Fatalf("another profile's write: unseen %v, want else", got)
	}
	replaced := object("a-else", "else", 1)
	replaced.UID = "uid-new"
	if got := w.unseen("other", []v1alpha1.ExtensionInstallation{replaced}, now); got != nil {
		t.Fatalf("the created object shown: unseen %v, want none", got)
	}
}

// TestNotes gathers a reconcile's record actions on a cluster into the
// annotations written in one patch: Default extensions added in order,
// once; the revision record set or dropped; other actions left alone.
func TestNotes(t *testing.T) {
	mc := &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge", Annotations: map[string]string{
		v1alpha1.AnnotationProfileDefaultsPrefix + "base": "b", "team": "edge"}}}
	n := notesOf("base", mc, []string{"b"})
	if n.changed() {
		t.Fatal("notes changed before any action")
	}
	rec := clusterRecord{Revision: 2, Previous: 1, Move: 3, At: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)}
	for _, a := range []action{
		{kind: actRecordDefault, want: want{ext: v1alpha1.ProfileExtension{Name: "c"}}},
		{kind: actRecordDefault, want: want{ext: v1alpha1.ProfileExtension{Name: "a"}}},
		{kind: actRecordDefault, want: want{ext: v1alpha1.ProfileExtension{Name: "c"}}},
		{kind: actRecordRevision, record: rec},
	} {
		if !n.take(a) {
			t.Fatalf("record action %v not taken", a.kind)
		}
	}
	for _, kind := range []actionKind{actCreate, actUpdate, actRemove} {
		if n.take(action{kind: kind}) {
			t.Errorf("installation action %v taken as a note", kind)
		}
	}
	wantAnnotations := map[string]string{v1alpha1.AnnotationProfileDefaultsPrefix + "base": "a,b,c", "team": "edge",
		v1alpha1.AnnotationProfileRevisionsPrefix + "base": rec.encode()}
	if !n.changed() || !maps.Equal(n.annotations, wantAnnotations) || n.recorded == nil || *n.recorded != rec {
		t.Errorf("notes: %v, recorded %v; want %v", n.annotations, n.recorded, wantAnnotations)
	}
	if mc.Annotations[v1alpha1.AnnotationProfileDefaultsPrefix+"base"] != "b" {
		t.Error("the notes changed the object they started from")
	}
	n.take(action{kind: actDropRecord})
	if _, ok := n.annotations[v1alpha1.AnnotationProfileRevisionsPrefix+"base"]; ok || !n.dropped || n.recorded != nil {
		t.Errorf("dropped: %v, dropped %v, recorded %v", n.annotations, n.dropped, n.recorded)
	}
	// Dropping a record there is not is no change.
	if n := notesOf("base", &v1alpha1.ManagedCluster{}, nil); n.take(action{kind: actDropRecord}) && n.changed() {
		t.Error("dropping no record changed the notes")
	}
	// The cache shows a, the profile wrote a,b since: adding c keeps b.
	stale := &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge", Annotations: map[string]string{
		v1alpha1.AnnotationProfileDefaultsPrefix + "base": "a"}}}
	n = notesOf("base", stale, []string{"a", "b"})
	if n.changed() {
		t.Error("the Default extensions known beyond the cache's are a change by themselves")
	}
	n.take(action{kind: actRecordDefault, want: want{ext: v1alpha1.ProfileExtension{Name: "c"}}})
	if got := n.annotations[v1alpha1.AnnotationProfileDefaultsPrefix+"base"]; got != "a,b,c" {
		t.Errorf("a Default added on a stale cache: %q, want a,b,c (b written before, not shown yet)", got)
	}
}

// TestDefaultsWritten reads the Default extensions written and not yet
// shown by the cache, until it shows them.
func TestDefaultsWritten(t *testing.T) {
	var w recordsWritten
	cached := map[string]string{v1alpha1.AnnotationProfileDefaultsPrefix + "base": "a"}
	w.addDefaults("base", "edge", []string{"a", "b", "c"})
	if got := w.defaults("base", "edge", cached); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("before the cache shows the write: %v, want a, b, c", got)
	}
	if got := w.defaults("base", "core", cached); !slices.Equal(got, []string{"a"}) {
		t.Errorf("another cluster: %v, want a", got)
	}
	shown := map[string]string{v1alpha1.AnnotationProfileDefaultsPrefix + "base": "a,b,c"}
	if got := w.defaults("base", "edge", shown); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("shown: %v", got)
	}
	// Forgotten once shown: the cache alone says from now on.
	if got := w.defaults("base", "edge", cached); !slices.Equal(got, []string{"a"}) {
		t.Errorf("after the write was shown: %v, want the cache's a", got)
	}
}
