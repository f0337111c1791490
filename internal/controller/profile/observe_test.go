package profile

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/rollout"
)

// TestObserve reads a cluster's revision from its record, or, without
// one, from its installations' labels, and finds a move cut short either
// way.
func TestObserve(t *testing.T) {
	p := profileOf("base", 0, v1alpha1.ProfileModeEnforced, "a", "b")
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	// written is an installation of p on edge, last written from rev by
	// move (0: written before records), Ready or not.
	written := func(ext string, rev, move int64, ready bool) v1alpha1.ExtensionInstallation {
		i := inst(ext+"-edge", "base", "edge", ext)
		i.Generation = 1
		i.Labels[v1alpha1.LabelProfileRevision] = revisionLabel(rev)
		i.Annotations = map[string]string{v1alpha1.AnnotationProfileRevisionAt: at.Format(time.RFC3339)}
		if rev > 1 {
			i.Annotations[v1alpha1.AnnotationProfilePreviousRevision] = revisionLabel(rev - 1)
		}
		if move > 0 {
			i.Annotations[v1alpha1.AnnotationProfileMove] = revisionLabel(move)
		}
		status := metav1.ConditionFalse
		if ready {
			status = metav1.ConditionTrue
		}
		i.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: status, Reason: "R", ObservedGeneration: 1}}
		return i
	}
	recorded := func(rec clusterRecord) cluster {
		return cluster{name: "edge", labels: map[string]string{"env": "prod"}, reachable: true, record: rec, hasRecord: true}
	}
	bare := cluster{name: "edge", labels: map[string]string{"env": "prod"}, reachable: true}
	for _, tc := range []struct {
		name     string
		cluster  cluster
		existing []v1alpha1.ExtensionInstallation
		want     rollout.Cluster // Name, Labels, Reachable, Window and Extension/Reason/Message not compared
		wantMove int64
	}{
		{name: "no record: the labels agree", cluster: bare,
			existing: []v1alpha1.ExtensionInstallation{written("a", 2, 0, true), written("b", 2, 0, true)},
			want:     rollout.Cluster{Revision: 2, Previous: 1, ChangedAt: at, Health: rollout.Ready}},
		{name: "no record: the labels disagree", cluster: bare,
			existing: []v1alpha1.ExtensionInstallation{written("a", 2, 0, true), written("b", 1, 0, false)},
			// b, not yet at 2, is not counted.
			want: rollout.Cluster{Revision: 2, Previous: 1, Partial: true, ChangedAt: at, Health: rollout.Ready}},
		{name: "record: whole", cluster: recorded(clusterRecord{Revision: 3, Previous: 2, Move: 4, At: at.Add(time.Hour)}),
			existing: []v1alpha1.ExtensionInstallation{written("a", 3, 4, true), written("b", 1, 1, true)},
			want:     rollout.Cluster{Revision: 3, Previous: 2, ChangedAt: at.Add(time.Hour), Health: rollout.Ready}, wantMove: 4},
		{name: "record: every installation counts for health", cluster: recorded(clusterRecord{Revision: 3, Previous: 2, Move: 4, At: at}),
			existing: []v1alpha1.ExtensionInstallation{written("a", 3, 4, true), written("b", 1, 1, false)},
			want:     rollout.Cluster{Revision: 3, Previous: 2, ChangedAt: at, Health: rollout.Progressing}, wantMove: 4},
		{name: "record: a move forward cut short", cluster: recorded(clusterRecord{Revision: 2, Previous: 1, Move: 4, At: at}),
			existing: []v1alpha1.ExtensionInstallation{written("a", 3, 5, true), written("b", 2, 4, true)},
			want:     rollout.Cluster{Revision: 3, Previous: 2, Partial: true, ChangedAt: at, Health: rollout.Ready}, wantMove: 5},
		{name: "record: a move back cut short", cluster: recorded(clusterRecord{Revision: 3, Previous: 2, Move: 5, At: at}),
			existing: []v1alpha1.ExtensionInstallation{written("a", 2, 6, true), written("b", 3, 5, true)},
			want:     rollout.Cluster{Revision: 3, Previous: 2, Partial: true, ChangedAt: at, Health: rollout.Ready}, wantMove: 6},
		{name: "record: a write the cache does not show yet", cluster: func() cluster {
			c := recorded(clusterRecord{Revision: 3, Previous: 2, Move: 4, At: at})
			c.unseen = true
			return c
		}(),
			// The record says 3, the cache still has a's object before the
			// move: Ready at its old generation, which says nothing of 3.
			existing: []v1alpha1.ExtensionInstallation{written("a", 2, 3, true), written("b", 1, 1, true)},
			want:     rollout.Cluster{Revision: 3, Previous: 2, ChangedAt: at, Health: rollout.Progressing}, wantMove: 4},
		{name: "record, installations written the cache does not show yet", cluster: func() cluster {
			c := recorded(clusterRecord{Revision: 3, Previous: 2, Move: 4, At: at})
			c.unseen = true
			return c
		}(),
			// The move created them: the cluster runs 3, not nothing (which
			// would move it again).
			want: rollout.Cluster{Revision: 3, Previous: 2, ChangedAt: at, Health: rollout.Progressing}, wantMove: 4},
		{name: "record without installations: not read", cluster: recorded(clusterRecord{Revision: 3, Previous: 2, Move: 5, At: at}),
			want: rollout.Cluster{Health: rollout.Ready}, wantMove: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clusters := []cluster{tc.cluster}
			v := revisionView{data: map[int64]*v1alpha1.ProfileRevisionData{1: wantedRevision(&p, nil)}, adopt: 1}
			got := observe(&p, []v1alpha1.ExtensionProfile{p}, clusters, tc.existing, v, 3,
				func(cluster) (rollout.WindowState, error) { return rollout.WindowState{}, nil })
			if len(got) != 1 {
				t.Fatalf("%d clusters observed, want 1", len(got))
			}
			g := got[0]
			tc.want.Changed = len(tc.existing) > 0 && tc.want.Revision == 3
			if g.Revision != tc.want.Revision || g.Previous != tc.want.Previous || g.Partial != tc.want.Partial ||
				g.Changed != tc.want.Changed || !g.ChangedAt.Equal(tc.want.ChangedAt) || g.Health != tc.want.Health {
				t.Errorf("observed revision %d previous %d partial %v changed %v at %v health %v,\nwant revision %d previous %d partial %v changed %v at %v health %v",
					g.Revision, g.Previous, g.Partial, g.Changed, g.ChangedAt, g.Health,
					tc.want.Revision, tc.want.Previous, tc.want.Partial, tc.want.Changed, tc.want.ChangedAt, tc.want.Health)
			}
			if c := clusters[0]; c.revision != g.Revision || c.previous != g.Previous || c.move != tc.wantMove {
				t.Errorf("cluster revision %d previous %d move %d, want %d %d %d", c.revision, c.previous, c.move, g.Revision, g.Previous, tc.wantMove)
			}
		})
	}
}

// A move that finishes one cut short records the revision the cluster
// ran before the cut-short move, numbered above every move seen; a move
// back records the revision it leaves.
func TestRecordOfAMove(t *testing.T) {
	p := profileOf("base", 0, v1alpha1.ProfileModeEnforced, "a")
	data := map[int64]*v1alpha1.ProfileRevisionData{2: wantedRevision(&p, nil), 3: wantedRevision(&p, nil)}
	for _, tc := range []struct {
		name string
		c    cluster
		to   int64
		want clusterRecord
	}{
		{name: "forward", c: cluster{name: "edge", revision: 2, previous: 1, move: 4}, to: 3, want: clusterRecord{Revision: 3, Previous: 2, Move: 5}},
		{name: "finish a cut-short move", c: cluster{name: "edge", revision: 3, previous: 2, move: 5}, to: 3, want: clusterRecord{Revision: 3, Previous: 2, Move: 6}},
		{name: "back", c: cluster{name: "edge", revision: 3, previous: 2, move: 6}, to: 2, want: clusterRecord{Revision: 2, Previous: 3, Move: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.labels = map[string]string{"env": "prod"}
			now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
			decided := decide(&p, []v1alpha1.ExtensionProfile{p}, []cluster{tc.c}, nil,
				revisionView{data: data, moves: map[string]int64{"edge": tc.to}, now: now, memo: versionMemo{}})
			last := decided.actions[len(decided.actions)-1]
			tc.want.At = now
			if last.kind != actRecordRevision || last.record != tc.want {
				t.Errorf("last action %v, want the record %+v", kinds(decided), tc.want)
			}
			for _, a := range decided.actions[:len(decided.actions)-1] {
				if a.want.move != tc.want.Move {
					t.Errorf("%s written by move %d, want %d", a.name, a.want.move, tc.want.Move)
				}
			}
		})
	}
}

// A record survives its annotation; one that does not parse is none.
func TestRecordRoundTrip(t *testing.T) {
	rec := clusterRecord{Revision: 3, Previous: 2, Move: 7, At: time.Date(2026, 11, 27, 9, 0, 0, 500, time.UTC)}
	got, ok := recordIn(map[string]string{v1alpha1.AnnotationProfileRevisionsPrefix + "base": rec.encode()}, "base")
	rec.At = rec.At.Truncate(time.Second)
	if !ok || got.Revision != rec.Revision || got.Previous != rec.Previous || got.Move != rec.Move || !got.At.Equal(rec.At) {
		t.Errorf("round trip %+v %v, want %+v", got, ok, rec)
	}
	for _, bad := range []string{"", "3", `{"revision":-1}`, `{"revision":2,"move":-1}`} {
		if _, ok := recordIn(map[string]string{v1alpha1.AnnotationProfileRevisionsPrefix + "base": bad}, "base"); ok {
			t.Errorf("record %q read, want none", bad)
		}
	}
	if _, ok := recordIn(map[string]string{v1alpha1.AnnotationProfileRevisionsPrefix + "other": rec.encode()}, "base"); ok {
		t.Error("another profile's record read")
	}
}

// A record this manager wrote counts until the cache shows it (or a newer
// one), then is forgotten.
func TestRecordsWritten(t *testing.T) {
	var w recordsWritten
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	old := map[string]string{v1alpha1.AnnotationProfileRevisionsPrefix + "base": clusterRecord{Revision: 1, Move: 1, At: at}.encode()}
	if rec, ok := w.newest("base", "edge", old); !ok || rec.Move != 1 {
		t.Fatalf("nothing written: got %+v %v, want the cache's move 1", rec, ok)
	}
	w.add("base", "edge", clusterRecord{Revision: 2, Previous: 1, Move: 2, At: at})
	if rec, ok := w.newest("base", "edge", old); !ok || rec.Move != 2 || rec.Revision != 2 {
		t.Fatalf("cache behind: got %+v %v, want the written move 2", rec, ok)
	}
	if rec, ok := w.newest("base", "edge", nil); !ok || rec.Move != 2 {
		t.Fatalf("no record cached: got %+v %v, want the written move 2", rec, ok)
	}
	if _, ok := w.newest("other", "edge", nil); ok {
		t.Fatal("another profile's written record was read")
	}
	caught := map[string]string{v1alpha1.AnnotationProfileRevisionsPrefix + "base": clusterRecord{Revision: 2, Previous: 1, Move: 2, At: at}.encode()}
	if rec, ok := w.newest("base", "edge", caught); !ok || rec.Move != 2 || len(w.records) != 0 {
		t.Fatalf("cache caught up: got %+v %v with %d remembered, want the cache's move 2 and none remembered", rec, ok, len(w.records))
	}
}
