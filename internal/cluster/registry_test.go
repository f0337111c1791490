package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/scheme"
)

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	gets int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

const testKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`

// A cluster's clients are built once and reused without reading its
// ManagedCluster and Secret again, until Forget or Recheck; a Secret
// changed by then gives new clients.
func TestTargetReusedUntilForgetOrRecheck(t *testing.T) {
	ctx := context.Background()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "edge-kubeconfig"},
		Data: map[string][]byte{"kubeconfig": []byte(testKubeconfig)}}
	mc := &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge"}, Spec: v1alpha1.ManagedClusterSpec{
		KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: "fleet", Name: "edge-kubeconfig"}}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(sec, mc).Build()
	reader := &countingReader{Reader: c}
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	r := &Registry{Reader: reader, Now: func() time.Time { return now }}

	first, err := r.Target(ctx, "edge")
	if err != nil || reader.gets != 2 {
		t.Fatalf("first Target: %v after %d reads, want the ManagedCluster and its Secret read", err, reader.gets)
	}
	for range 10 {
		if again, err := r.Target(ctx, "edge"); err != nil || again != first {
			t.Fatalf("Target within Recheck: %v, same clients %v", err, again == first)
		}
	}
	if reader.gets != 2 {
		t.Fatalf("%d reads after 11 Targets within Recheck, want 2", reader.gets)
	}

	r.Forget("edge")
	if again, err := r.Target(ctx, "edge"); err != nil || again == first || reader.gets != 4 {
		t.Fatalf("Target after Forget: %v, new clients %v, %d reads; want new clients from 2 more reads", err, again != first, reader.gets)
	}
	first, _ = r.Target(ctx, "edge")

	now = now.Add(DefaultRecheck)
	if again, err := r.Target(ctx, "edge"); err != nil || again != first || reader.gets != 6 {
		t.Fatalf("Target after Recheck, Secret unchanged: %v, same clients %v, %d reads; want the same clients after 2 more reads",
			err, again == first, reader.gets)
	}

	sec.Data["kubeconfig"] = []byte(testKubeconfig + "\n")
	if err := c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	now = now.Add(DefaultRecheck)
	if again, err := r.Target(ctx, "edge"); err != nil || again == first {
		t.Fatalf("Target after Recheck, Secret changed: %v, new clients %v; want new clients", err, again != first)
	}
}
