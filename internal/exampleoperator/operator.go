// Package exampleoperator is the example operator of Annex's built-in
// catalog: a small, real controller-runtime operator, packaged as OLM
// registry+v1 bundles (internal/catalog/builtin/operators) whose
// Deployments run the image annex.dev/example-operator:<version>. `annex
// dev` runs that image as the process bin/example-operator (see
// internal/localcluster, Options.Images).
//
// Its API is Banner (example.annex.dev/v1alpha1, namespaced). For each
// Banner in the namespaces it watches, the operator
//
//   - adds the finalizer example.annex.dev/cleanup;
//   - creates or updates the ConfigMap <name>-banner (controlled by the
//     Banner) with data.message = spec.message, and from version 0.2.0
//     data.version = the operator's version;
//   - only then sets Ready=True (reason Created, the message names the
//     ConfigMap) and, from 0.2.0, status.configMapName;
//   - sets Ready=False, reason Conflict, when a ConfigMap of that name
//     exists that the Banner does not control: the operator leaves it alone
//     and says what to do; reason Failed when the API refuses the write
//     (e.g. missing RBAC), retrying;
//   - on deletion deletes the ConfigMap (only if the Banner controls it)
//     and removes the finalizer. Banners deleted while no operator runs
//     therefore stay until one does.
package exampleoperator

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

const (
	// Name is the operator's package name in catalogs and the name of its
	// Deployment and ServiceAccount.
	Name = "example-operator"
	// Image is the image repository its bundles' Deployments run; the tag
	// is the operator version.
	Image = "annex.dev/example-operator"
	// Finalizer holds a Banner until its ConfigMap is deleted.
	Finalizer = "example.annex.dev/cleanup"
	// ConditionReady is the condition summarising a Banner.
	ConditionReady = "Ready"
	// Reasons of the Ready condition.
	ReasonCreated  = "Created"
	ReasonConflict = "Conflict"
	ReasonFailed   = "Failed"

	configMapSuffix = "-banner"
)

// ConfigMapName is the name of the ConfigMap a Banner publishes.
func ConfigMapName(bannerName string) string { return bannerName + configMapSuffix }

// behaviour is what an operator version does beyond 0.1.0.
type behaviour struct {
	// recordVersion writes data.version into the ConfigMap and
	// status.configMapName (from 0.2.0).
	recordVersion bool
	// webhooks serves the validating and the conversion webhook (from
	// 0.4.0; see webhooks.go).
	webhooks bool
}

// behaviourOf returns the behaviour of a version (semver, e.g. 0.2.0).
func behaviourOf(version string) (behaviour, error) {
	v, err := semver.StrictNewVersion(strings.TrimPrefix(version, "v"))
	if err != nil {
		return behaviour{}, fmt.Errorf("operator version %q is not a semantic version such as 0.2.0: %w", version, err)
	}
	return behaviour{
		recordVersion: !v.LessThan(semver.MustParse("0.2.0")),
		webhooks:      !v.LessThan(semver.MustParse("0.4.0")),
	}, nil
}

// ParseNamespaces reads the comma-separated namespaces of OLM's
// olm.targetNamespaces annotation (as WATCH_NAMESPACE carries it): empty
// means all namespaces (nil).
func ParseNamespaces(s string) []string {
	var out []string
	for ns := range strings.SplitSeq(s, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}
