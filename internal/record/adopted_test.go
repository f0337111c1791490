package record

import (
	"testing"

	"github.com/annex-platform/annex/internal/adopt"
)

// What a record keeps of an adoption: a Helm release with its storage
// and last manifest, an OLM operator by its Subscription, nothing without
// one.
func TestAdoptedBy(t *testing.T) {
	if AdoptedBy(nil) != nil {
		t.Error("nothing adopted, yet a record of it")
	}
	rel := &adopt.Takeover{StorageNamespace: "helm-store", Release: &adopt.Release{
		Name: "web", Namespace: "apps", Revision: 7, Chart: "podinfo", ChartVersion: "6.5.0", Manifest: "kind: ConfigMap",
	}}
	got := *AdoptedBy(rel)
	want := Adopted{Kind: adopt.KindHelmRelease, Name: "web", Namespace: "apps", StorageNamespace: "helm-store", Revision: 7,
		Chart: "podinfo", Version: "6.5.0", Manifest: "kind: ConfigMap"}
	if got != want {
		t.Errorf("release: got %+v, want %+v", got, want)
	}
	op := &adopt.Takeover{Operator: &adopt.Operator{Subscription: "etcd", Namespace: "operators", Package: "etcd", Version: "0.9.4", CSV: "etcd.v0.9.4"}}
	got = *AdoptedBy(op)
	want = Adopted{Kind: adopt.KindSubscription, Name: "etcd", Namespace: "operators", Chart: "etcd", Version: "0.9.4"}
	if got != want {
		t.Errorf("operator: got %+v, want %+v", got, want)
	}
}
