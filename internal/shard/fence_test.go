package shard

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// TestFence: work is admitted on the clusters the shard serves only, and
// a cluster relabelled away is idle once the work admitted before ends,
// with none admitted after. The fake client stands for the manager's
// cache: the fence only reads it.
func TestFence(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mc := func(name, label, serving string) *v1alpha1.ManagedCluster {
		c := &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}, Status: v1alpha1.ManagedClusterStatus{Shard: serving}}
		if label != "" {
			c.Labels[v1alpha1.LabelShard] = label
		}
		return c
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.ManagedCluster{}).
		WithObjects(mc("a-1", "a", "a"), mc("a-2", "a", ""), mc("d-1", "", "default")).Build()
	a := &Fence{Shard: "a", Clusters: c}
	def := &Fence{Clusters: c}
	for _, tc := range []struct {
		fence   *Fence
		cluster string
		want    bool
	}{
		{a, "a-1", true},   // served by a
		{a, "a-2", false},  // a's, not claimed yet
		{a, "d-1", false},  // the default shard's
		{a, "", false},     // the hub is the default shard's
		{def, "", true},    // the hub
		{def, "d-1", true}, // served by default
		{def, "a-1", false},
		{a, "gone", false},  // no ManagedCluster: the default shard reports it
		{def, "gone", true}, // ... as missing
	} {
		leave, ok, err := tc.fence.Enter(ctx, tc.cluster)
		if err != nil || ok != tc.want {
			t.Errorf("shard %q Enter(%q) = %v, %v; want %v", tc.fence.Shard, tc.cluster, ok, err, tc.want)
		}
		if ok {
			leave()
		}
	}

	// Work under way on a-1 when it is relabelled to the default shard.
	leave, ok, _ := a.Enter(ctx, "a-1")
	if !ok {
		t.Fatal("a-1 not admitted")
	}
	relabelled := &v1alpha1.ManagedCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: "a-1"}, relabelled); err != nil {
		t.Fatal(err)
	}
	relabelled.Labels = nil
	if err := c.Update(ctx, relabelled); err != nil {
		t.Fatal(err)
	}
	if a.Idle("a-1") {
		t.Error("a-1 idle with work under way")
	}
	if _, ok, _ := a.Enter(ctx, "a-1"); ok {
		t.Error("work admitted on a-1 after its relabel")
	}
	leave()
	leave() // a second call changes nothing
	if !a.Idle("a-1") {
		t.Error("a-1 not idle once its work ended")
	}
}
