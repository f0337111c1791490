package fleet

import (
	"errors"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
)

func TestUnreachable(t *testing.T) {
	down := errors.New("dial tcp: connection refused")
	for _, tc := range []struct{ cluster, want string }{
		{"", "spec.cluster: cannot reach the hub cluster: dial tcp: connection refused; check the ManagedCluster and its kubeconfig Secret"},
		{"edge-1", "spec.cluster: cannot reach edge-1: dial tcp: connection refused; check the ManagedCluster and its kubeconfig Secret"},
	} {
		if got := Unreachable(tc.cluster, down); *got != (news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonClusterUnavailable, Message: tc.want}) {
			t.Errorf("Unreachable(%q) = %+v, want %q", tc.cluster, got, tc.want)
		}
	}
}
