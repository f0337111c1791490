package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// TestStatusByShard: annexctl status groups clusters by shard, the
// default shard's first (the tree lists them by name), and says which
// cluster is being handed over.
func TestStatusByShard(t *testing.T) {
	mc := func(name, label, serving string) v1alpha1.ManagedCluster {
		c := v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1alpha1.ManagedClusterStatus{Shard: serving}}
		if label != "" {
			c.Labels = map[string]string{v1alpha1.LabelShard: label}
		}
		return c
	}
	clusters := []v1alpha1.ManagedCluster{
		// Served by its shard.
		mc("eu-1", "eu", "eu"),
		// Relabelled to eu; the default shard finishes its work first.
		mc("eu-2", "eu", "default"),
		// Unlabelled, served by the default shard.
		mc("us-1", "", "default"),
		// Unlabelled and never claimed (no sharding manager ran yet):
		// nothing to say.
		mc("us-2", "", ""),
		// Labelled default (as good as no label), shard eu finishes its
		// work first.
		mc("us-3", "default", "eu"),
		// Released to shard eu, not claimed yet.
		mc("eu-3", "eu", ""),
	}
	tree := BuildStatus(clusters, nil, nil, StatusFilter{})
	var got []string
	for _, cs := range tree.Clusters {
		got = append(got, cs.Name+" shard="+cs.Shard+" "+cs.Handover)
	}
	want := []string{
		"eu-1 shard=eu ",
		"eu-2 shard=eu served by shard default until it hands the cluster over to shard eu",
		"eu-3 shard=eu not served yet: shard eu claims it",
		"us-1 shard= ",
		"us-2 shard= ",
		"us-3 shard= served by shard eu until it hands the cluster over to shard default",
	}
	if !slices.Equal(got, want) {
		t.Errorf("clusters:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var b bytes.Buffer
	if err := WriteStatus(&b, OutputTable, tree, time.Now()); err != nil {
		t.Fatal(err)
	}
	at := -1
	for _, line := range []string{"shard default: 3 clusters, 0/0 ready\n", "cluster us-1:", "cluster us-3:", "shard eu: 3 clusters, 0/0 ready\n",
		"cluster eu-1:", "cluster eu-2: 0/0 ready, not reachable; served by shard default until it hands the cluster over to shard eu\n"} {
		i := bytes.Index(b.Bytes(), []byte(line))
		if i < at {
			t.Errorf("status lacks %q after what came before, or has it earlier:\n%s", line, b.String())
		}
		at = i
	}
	// One shard: no shard headings.
	b.Reset()
	if err := WriteStatus(&b, OutputTable, BuildStatus(clusters[2:4], nil, nil, StatusFilter{}), time.Now()); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b.Bytes(), []byte("shard ")) {
		t.Errorf("a fleet of one shard printed shard headings:\n%s", b.String())
	}
}
