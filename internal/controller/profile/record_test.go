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
	clusters := func(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

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
	if got := clusters(w.unseen("base", before, now)); !slices.Equal(got, []string{"core", "edge", "far"}) {
		t.Fatalf("before the cache shows anything: unseen %v, want core, edge, far", got)
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
