package cluster

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

func TestClientConfig(t *testing.T) {
	// A configuration that says nothing about rate limits (annex dev's
	// local cluster, a kubeconfig) gets none: client-go would allow 5
	// requests per second.
	plain := &rest.Config{Host: "https://127.0.0.1:6443"}
	if got := ClientConfig(plain); got.QPS != -1 {
		t.Errorf("QPS %v, want -1 (no client-side limit)", got.QPS)
	}
	if plain.QPS != 0 {
		t.Error("ClientConfig changed its argument")
	}
	// A limit the user set is kept.
	if got := ClientConfig(&rest.Config{QPS: 50, Burst: 100}); got.QPS != 50 || got.Burst != 100 {
		t.Errorf("QPS %v burst %d, want the configured 50/100", got.QPS, got.Burst)
	}
	limiter := flowcontrol.NewTokenBucketRateLimiter(1, 1)
	if got := ClientConfig(&rest.Config{RateLimiter: limiter}); got.QPS != 0 || got.RateLimiter != limiter {
		t.Error("a configured rate limiter must be kept")
	}
}
