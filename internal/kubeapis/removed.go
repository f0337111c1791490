// Package kubeapis knows which Kubernetes API versions each Kubernetes
// release removed, so that Annex can say, before a cluster is upgraded,
// which installed objects the new version will no longer serve.
package kubeapis

import (
	"fmt"
	"slices"

	"github.com/Masterminds/semver/v3"
)

// Removal is an API version of some kinds that a Kubernetes minor release
// stopped serving.
type Removal struct {
	Group, Version string
	// Kinds removed with it; empty means every kind of the group version.
	Kinds []string
	// RemovedIn is the first minor release that no longer serves it.
	RemovedIn string
	// Use is what to migrate to.
	Use string
}

// Removals lists the API versions Kubernetes removed since 1.16, from the
// deprecated API migration guide. Keep it sorted by release.
var Removals = []Removal{
	{Group: "extensions", Version: "v1beta1", Kinds: []string{"Deployment", "DaemonSet", "ReplicaSet", "NetworkPolicy", "PodSecurityPolicy"}, RemovedIn: "1.16", Use: "apps/v1, networking.k8s.io/v1"},
	{Group: "apps", Version: "v1beta1", RemovedIn: "1.16", Use: "apps/v1"},
	{Group: "apps", Version: "v1beta2", RemovedIn: "1.16", Use: "apps/v1"},
	{Group: "extensions", Version: "v1beta1", Kinds: []string{"Ingress"}, RemovedIn: "1.22", Use: "networking.k8s.io/v1"},
	{Group: "networking.k8s.io", Version: "v1beta1", Kinds: []string{"Ingress", "IngressClass"}, RemovedIn: "1.22", Use: "networking.k8s.io/v1"},
	{Group: "apiextensions.k8s.io", Version: "v1beta1", RemovedIn: "1.22", Use: "apiextensions.k8s.io/v1"},
	{Group: "apiregistration.k8s.io", Version: "v1beta1", RemovedIn: "1.22", Use: "apiregistration.k8s.io/v1"},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1", RemovedIn: "1.22", Use: "admissionregistration.k8s.io/v1"},
	{Group: "authentication.k8s.io", Version: "v1beta1", RemovedIn: "1.22", Use: "authentication.k8s.io/v1"},
	{Group: "authorization.k8s.io", Version: "v1beta1", RemovedIn: "1.22", Use: "authorization.k8s.io/v1"},
	{Group: "certificates.k8s.io", Version: "v1beta1", RemovedIn: "1.22", Use: "certificates.k8s.io/v1"},
	{Group: "coordination.k8s.io", Version: "v1beta1", RemovedIn: "1.22", Use: "coordination.k8s.io/v1"},
	{Group: "rbac.authorization.k8s.io", Version: "v1beta1", RemovedIn: "1.22", Use: "rbac.authorization.k8s.io/v1"},
	{Group: "scheduling.k8s.io", Version: "v1beta1", RemovedIn: "1.22", Use: "scheduling.k8s.io/v1"},
	{Group: "storage.k8s.io", Version: "v1beta1", Kinds: []string{"CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"}, RemovedIn: "1.22", Use: "storage.k8s.io/v1"},
	{Group: "batch", Version: "v1beta1", Kinds: []string{"CronJob"}, RemovedIn: "1.25", Use: "batch/v1"},
	{Group: "discovery.k8s.io", Version: "v1beta1", RemovedIn: "1.25", Use: "discovery.k8s.io/v1"},
	{Group: "events.k8s.io", Version: "v1beta1", RemovedIn: "1.25", Use: "events.k8s.io/v1"},
	{Group: "autoscaling", Version: "v2beta1", RemovedIn: "1.25", Use: "autoscaling/v2"},
	{Group: "policy", Version: "v1beta1", Kinds: []string{"PodDisruptionBudget"}, RemovedIn: "1.25", Use: "policy/v1"},
	{Group: "policy", Version: "v1beta1", Kinds: []string{"PodSecurityPolicy"}, RemovedIn: "1.25", Use: "Pod Security Admission"},
	{Group: "node.k8s.io", Version: "v1beta1", Kinds: []string{"RuntimeClass"}, RemovedIn: "1.25", Use: "node.k8s.io/v1"},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta1", RemovedIn: "1.26", Use: "flowcontrol.apiserver.k8s.io/v1"},
	{Group: "autoscaling", Version: "v2beta2", RemovedIn: "1.26", Use: "autoscaling/v2"},
	{Group: "storage.k8s.io", Version: "v1beta1", Kinds: []string{"CSIStorageCapacity"}, RemovedIn: "1.27", Use: "storage.k8s.io/v1"},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta2", RemovedIn: "1.29", Use: "flowcontrol.apiserver.k8s.io/v1"},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta3", RemovedIn: "1.32", Use: "flowcontrol.apiserver.k8s.io/v1"},
}

// RemovedIn returns the removal that stops kubeVersion (e.g. "1.32.0" or
// "v1.32.0") from serving group/version kind, if any.
func RemovedIn(group, version, kind, kubeVersion string) (*Removal, error) {
	v, err := semver.NewVersion(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("Kubernetes version %q: %w", kubeVersion, err)
	}
	if r := Find(group, version, kind); r != nil && !v.LessThan(semver.MustParse(r.RemovedIn+".0-0")) {
		return r, nil
	}
	return nil, nil
}

// Find returns the removal of group/version kind in Removals, whichever
// Kubernetes version is asked about, or nil when the table knows none.
func Find(group, version, kind string) *Removal {
	for i := range Removals {
		r := &Removals[i]
		if r.Group == group && r.Version == version && (len(r.Kinds) == 0 || slices.Contains(r.Kinds, kind)) {
			return r
		}
	}
	return nil
}
