package shard

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
)

func TestDecide(t *testing.T) {
	a := map[string]string{"annex.dev/shard": "a"}
	def := map[string]string{"annex.dev/shard": "default"}
	for _, tc := range []struct {
		name    string
		me      string
		labels  map[string]string
		serving string
		gone    bool
		want    Action
	}{
		// An unlabelled cluster is the default shard's; nobody serves it yet.
		{"unlabelled, unclaimed", Default, nil, "", false, Claim},
		// The label's value "default" is the same as no label.
		{"labelled default, served", Default, def, Default, false, Serve},
		{"unlabelled, served", Default, nil, Default, false, Serve},
		// Shard a does not touch the default shard's clusters.
		{"a sees an unlabelled cluster", "a", nil, Default, false, Ignore},
		{"a sees an unclaimed unlabelled cluster", "a", nil, "", false, Ignore},
		{"a claims its cluster", "a", a, "", false, Claim},
		{"a serves its cluster", "a", a, "a", false, Serve},
		// Relabelled from a to default: a releases, default waits for it.
		{"old shard releases", "a", nil, "a", false, Release},
		{"new shard waits", Default, nil, "a", false, Wait},
		// The old shard's leader is gone: the new shard takes over.
		{"new shard takes over", Default, nil, "a", true, TakeOver},
		// Another shard's leader being gone is nothing to a third shard.
		{"third shard", "b", a, "a", true, Ignore},
		// A release still goes through when the old shard is asked
		// whether it is gone (it never is to itself).
		{"old shard releases whatever the lease", "a", nil, "a", true, Release},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.me, tc.labels, tc.serving, tc.gone); got != tc.want {
				t.Errorf("Decide(%q, %v, %q, %v) = %s, want %s", tc.me, tc.labels, tc.serving, tc.gone, got, tc.want)
			}
		})
	}
}

func TestValidateAndLeaseName(t *testing.T) {
	for _, tc := range []struct {
		name  string
		valid bool
		lease string
	}{
		// The default shard keeps the unsharded manager's Lease.
		{Default, true, "annex-manager.annex.dev"},
		{"eu-west-1", true, "eu-west-1.annex-manager.annex.dev"},
		// Not DNS labels.
		{"EU", false, ""},
		{"a.b", false, ""},
		{"", false, ""},
	} {
		err := Validate(tc.name)
		if (err == nil) != tc.valid {
			t.Errorf("Validate(%q) = %v, want valid %v", tc.name, err, tc.valid)
		}
		if tc.valid && LeaseName(tc.name) != tc.lease {
			t.Errorf("LeaseName(%q) = %q, want %q", tc.name, LeaseName(tc.name), tc.lease)
		}
	}
}

func TestLeaderGone(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	held := func(seconds int32) *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod-1"), LeaseDurationSeconds: ptr.To(seconds)}}
	}
	for _, tc := range []struct {
		name  string
		lease *coordinationv1.Lease
		after time.Duration
		want  bool
	}{
		// Released on a clean stop: nobody leads.
		{"no holder", &coordinationv1.Lease{}, 0, true},
		{"empty holder", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("")}}, 0, true},
		// Held and seen unchanged for less than its duration: alive.
		{"fresh", held(15), 14 * time.Second, false},
		// Unchanged for its whole duration: the leader stopped renewing.
		{"expired", held(15), 15 * time.Second, true},
		// Without a duration, client-go's default of 15 s.
		{"default duration", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod-1")}}, 16 * time.Second, true},
	} {
		if got := leaderGone(tc.lease, t0, t0.Add(tc.after)); got != tc.want {
			t.Errorf("%s: leaderGone = %v, want %v", tc.name, got, tc.want)
		}
	}
}
