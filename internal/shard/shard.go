// Package shard decides which manager writes to which cluster when
// managers are sharded by the annex.dev/shard label of ManagedClusters.
//
// A cluster belongs to the shard its label names (the default shard
// without the label); the hub itself always belongs to the default shard.
// A shard writes to a cluster only while it serves it: its label and its
// status.shard both name the shard. The handover of a relabelled cluster
// is fenced by status.shard, not timed: the shard that served it stops
// admitting work on it, waits for the work under way to end, and only
// then empties status.shard; the new shard claims the cluster only when
// status.shard is empty, and both writes are conditional on the
// resourceVersion they were decided on. The one exception is a shard
// with no live leader (Leases): its clusters are taken over, which is as
// safe as leader election itself — a leader that cannot renew its Lease
// stops before the Lease expires.
//
// Decide is the pure core; Fence and Leases are its two thin shells.
package shard

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Default is the shard of clusters without the annex.dev/shard label, and
// of the hub.
const Default = "default"

// Validate checks a shard name: a DNS label, since it is a label value and
// part of a Lease name.
func Validate(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("shard %q: %s; use lower-case letters, digits and '-', at most 63 characters", name, errs[0])
	}
	return nil
}

// Of returns the shard that labels (a ManagedCluster's) assign it to.
func Of(labels map[string]string) string {
	if s := labels[v1alpha1.LabelShard]; s != "" {
		return s
	}
	return Default
}

// LeaseName is the name of the Lease the managers of a shard elect their
// leader with. The default shard keeps the name of the unsharded manager,
// so that upgrading a manager into the default shard needs no handover of
// the Lease.
func LeaseName(shard string) string {
	if shard == "" || shard == Default {
		return "annex-manager.annex.dev"
	}
	return shard + ".annex-manager.annex.dev"
}

// Action is what a shard does about one cluster.
type Action int

const (
	// Ignore: the cluster belongs to another shard, and this one does
	// not serve it.
	Ignore Action = iota
	// Serve: the cluster is this shard's and this shard serves it; only
	// now may it write to the cluster.
	Serve
	// Claim: the cluster is this shard's and nobody serves it: write
	// status.shard.
	Claim
	// Release: this shard serves the cluster but its label names another
	// shard now: admit no new work on it, let the work under way end,
	// then empty status.shard.
	Release
	// Wait: the cluster is this shard's but another shard, whose leader
	// lives, still serves it; that shard releases it.
	Wait
	// TakeOver: the cluster is this shard's and the shard serving it has
	// no live leader: write status.shard over it.
	TakeOver
)

func (a Action) String() string {
	return [...]string{"Ignore", "Serve", "Claim", "Release", "Wait", "TakeOver"}[a]
}

// Decide returns what shard me does about a cluster with these labels,
// served by serving (its status.shard; "" for nobody). servingGone says
// that the serving shard has no live leader; it matters only when another
// shard serves a cluster that is now me's.
func Decide(me string, labels map[string]string, serving string, servingGone bool) Action {
	mine := Of(labels) == me
	switch {
	case serving == me && mine:
		return Serve
	case serving == me:
		return Release
	case !mine:
		return Ignore
	case serving == "":
		return Claim
	case servingGone:
		return TakeOver
	default:
		return Wait
	}
}
