package rollout

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// BenchmarkDecideThousand plans the first step of a rollout over 1,000
// clusters (1 %, 10 %, rest): the profile controller runs Decide on every
// reconcile of the profile, which every installation change starts.
func BenchmarkDecideThousand(b *testing.B) {
	pct := intstr.FromString("1%")
	s := canary()
	s.Steps[0].Clusters = &pct
	in := Input{Profile: "p", Now: t0, Strategy: s, Revision: 2, Clusters: fleet(1000, 1)}
	for b.Loop() {
		Decide(in)
	}
}
