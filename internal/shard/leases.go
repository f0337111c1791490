package shard

import (
	"context"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Leases tells whether a shard has a live leader, from the Lease its
// managers elect their leader with (LeaseName) in Namespace.
//
// A leader is gone when nobody holds the Lease, or when this process has
// seen the Lease unchanged for its whole lease duration. Time is measured
// on this process's clock from when it first saw the Lease as it is, as
// client-go's leader election does, so the clocks of the two shards need
// not agree. A leader that cannot renew stops working after its renew
// deadline, which is shorter than the lease duration: when the Lease has
// expired, the old shard's leader has stopped writing.
//
// A shard without a Lease (its managers run without --leader-elect) is
// never gone: nothing says that it stopped, so its clusters wait for it,
// or for a person to empty their status.shard.
type Leases struct {
	// Reader reads Leases (uncached: only shards waiting for a handover
	// ask).
	Reader client.Reader
	// Namespace holds the shards' Leases; empty: no shard is ever gone.
	Namespace string
	// Now returns the current time (default time.Now).
	Now func() time.Time

	mu   sync.Mutex
	seen map[string]sighting
}

// sighting is a version of a Lease and when this process first saw it.
type sighting struct {
	version string
	at      time.Time
}

// Gone reports whether shard has no live leader; an error says that its
// Lease could not be read.
func (l *Leases) Gone(ctx context.Context, shard string) (bool, error) {
	if l.Namespace == "" {
		return false, nil
	}
	lease := &coordinationv1.Lease{}
	if err := l.Reader.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: LeaseName(shard)}, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]sighting{}
	}
	last, ok := l.seen[shard]
	if !ok || last.version != lease.ResourceVersion {
		last = sighting{version: lease.ResourceVersion, at: now()}
		l.seen[shard] = last
	}
	return leaderGone(lease, last.at, now()), nil
}

// leaderGone decides from a Lease, when this process first saw it as it
// is, and now: nobody holds it, or it has not been renewed for its lease
// duration since.
func leaderGone(lease *coordinationv1.Lease, seenAt, now time.Time) bool {
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return true
	}
	duration := 15 * time.Second // client-go's and controller-runtime's default
	if lease.Spec.LeaseDurationSeconds != nil && *lease.Spec.LeaseDurationSeconds > 0 {
		duration = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	return !now.Before(seenAt.Add(duration))
}
