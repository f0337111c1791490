// Package fleet holds the conventions every controller of a hub shares
// about the installations of many clusters: how the installation of an
// extension on a cluster is named, and how messages name a cluster.
package fleet

import (
	"fmt"
	"strings"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
	"github.com/annex-platform/annex/internal/news"
)

// InstallationName is the name of the installation of extension ext on
// cluster (a ManagedCluster name; "" for the hub) that Annex creates, for
// a dependency or a profile: ext on the hub, "<ext>-<cluster>" elsewhere
// (dots in the cluster's name become dashes), so that the same extension
// on many clusters from one namespace neither collides nor is shared
// across clusters, and a profile's extension and another installation's
// dependency on the same cluster are one installation. The name is also
// the release name charts name their objects after, so it stays a DNS
// label: a name longer than 63 characters is shortened by names.Bounded
// and ends in a hash of the full name.
func InstallationName(ext, cluster string) string {
	name := ext
	if cluster != "" {
		name = ext + "-" + strings.ReplaceAll(cluster, ".", "-")
	}
	return names.Bounded(name, names.MaxDNSLabel)
}

// ClusterName names a cluster (a ManagedCluster name; "" for the hub) in
// messages: "the hub cluster" or "cluster <name>".
func ClusterName(cluster string) string {
	if cluster == "" {
		return "the hub cluster"
	}
	return "cluster " + cluster
}

// Unreachable is how an installation whose cluster (spec.cluster; "" for
// the hub) cannot be reached, with err, stops: retried, and saying what
// to check.
func Unreachable(cluster string, err error) *news.Stop {
	name := cluster
	if name == "" {
		name = "the hub cluster"
	}
	return &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonClusterUnavailable,
		Message: fmt.Sprintf("spec.cluster: cannot reach %s: %v; check the ManagedCluster and its kubeconfig Secret", name, err)}
}
