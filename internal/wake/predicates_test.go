package wake

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// A profile's rollout records on an installation do not reconcile it;
// every other annotation change does.
func TestAnnotationsChanged(t *testing.T) {
	withAnnotations := func(a map[string]string) *v1alpha1.ExtensionInstallation {
		return &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Annotations: a}}
	}
	at, prev := v1alpha1.AnnotationProfileRevisionAt, v1alpha1.AnnotationProfilePreviousRevision
	for _, tc := range []struct {
		name     string
		old, new map[string]string
		want     bool
	}{
		{"none", nil, nil, false},
		{"rollout records written", nil, map[string]string{at: "2026-11-26T10:00:00Z", prev: "3"}, false},
		{"rollout records changed", map[string]string{at: "a", prev: "3", "x": "1"}, map[string]string{at: "b", prev: "4", "x": "1"}, false},
		{"rollout records removed", map[string]string{at: "a"}, map[string]string{}, false},
		{"another added", map[string]string{at: "a"}, map[string]string{at: "a", "x": "1"}, true},
		{"another changed", map[string]string{"x": "1"}, map[string]string{"x": "2"}, true},
		{"another removed with records written", map[string]string{"x": "1"}, map[string]string{at: "a"}, true},
		{"same count, other key", map[string]string{"x": "1", at: "a"}, map[string]string{"y": "1", prev: "1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := AnnotationsChanged().Update(event.UpdateEvent{ObjectOld: withAnnotations(tc.old), ObjectNew: withAnnotations(tc.new)})
			if got != tc.want {
				t.Errorf("AnnotationsChanged(%v → %v) = %v, want %v", tc.old, tc.new, got, tc.want)
			}
		})
	}
}

// shardOf owns the clusters it lists.
type shardOf map[string]bool

func (s shardOf) Owns(_ context.Context, cluster string) bool { return s[cluster] }

// A manager's shard sees the events of the installations on its clusters
// only; without shards, every event.
func TestOfShard(t *testing.T) {
	on := func(cluster string) *v1alpha1.ExtensionInstallation {
		inst := &v1alpha1.ExtensionInstallation{}
		inst.Spec.Cluster = cluster
		return inst
	}
	for _, tc := range []struct {
		name    string
		shard   Shard
		cluster string
		want    bool
	}{
		// One of the shard's clusters.
		{name: "owned", shard: shardOf{"edge-1": true}, cluster: "edge-1", want: true},
		// Another shard's.
		{name: "not owned", shard: shardOf{"edge-1": true}, cluster: "edge-2"},
		// The hub is a cluster like any other.
		{name: "hub not owned", shard: shardOf{"edge-1": true}, cluster: ""},
		// No sharding: every installation.
		{name: "no shards", cluster: "edge-2", want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := OfShard(tc.shard).Create(event.CreateEvent{Object: on(tc.cluster)})
			if got != tc.want {
				t.Errorf("OfShard passes an installation on %q: %v, want %v", tc.cluster, got, tc.want)
			}
		})
	}
}
