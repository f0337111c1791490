// Package enginefacts answers an engine's questions (engine.Facts) for one
// installation: its values from the hub, the target cluster's API
// versions, kinds and Secrets, the parameters of the installed revision,
// the base a package extends among the Extensions on offer, and the time
// certificates are issued at. Each is read only when the engine asks.
//
// The errors are the caller's to phrase and classify: a values source
// that blocks is kept in ValuesProblem, an API version read that fails in
// APIVersionsErr, and Base refuses with a *resolve.BaseError, so that the
// installation controller reports them as its own, not the engine's.
package enginefacts

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/resolve"
	"github.com/annex-platform/annex/internal/target"
	"github.com/annex-platform/annex/internal/valuesfrom"
)

// Of answers engine.Facts for Installation during one reconcile. Set the
// inputs; read ValuesProblem and APIVersionsErr once the engine returned.
type Of struct {
	Ctx context.Context
	// Hub reads spec.valuesFrom's sources.
	Hub          client.Reader
	Installation *v1alpha1.ExtensionInstallation
	// Target is the installation's cluster, as the installation acts on it.
	Target target.Cluster
	// Extensions are those on offer to the installation's cluster, among
	// which Base chooses.
	Extensions []v1alpha1.Extension
	// Installed returns the effective parameters of the installed
	// revision (nil on install).
	Installed func() (map[string]any, error)
	// Clock is the time certificates are issued and renewed at.
	Clock func() time.Time

	// ValuesProblem is why Values failed, when a values source blocks
	// (Wait: it may appear later; otherwise the spec must change).
	ValuesProblem *valuesfrom.Problem
	// APIVersionsErr is why APIVersions failed: not the artifact's fault.
	APIVersionsErr error
}

var _ engine.Facts = (*Of)(nil)

// Values are spec.values merged with spec.valuesFrom; a source that
// blocks is kept in ValuesProblem and returned as an error.
func (f *Of) Values() (map[string]any, error) {
	composed, p, err := valuesfrom.Compose(f.Ctx, f.Hub, f.Installation)
	if p != nil {
		f.ValuesProblem = p
		return nil, errors.New(p.Message)
	}
	return composed, err
}

// APIVersions are the target cluster's; a failure is kept in
// APIVersionsErr.
func (f *Of) APIVersions() ([]string, error) {
	versions, err := f.Target.APIVersions(f.Ctx)
	if err != nil {
		f.APIVersionsErr = err
	}
	return versions, err
}

// InstalledParams are what Installed returns.
func (f *Of) InstalledParams() (map[string]any, error) { return f.Installed() }

// Serves reports whether the target cluster serves gvk.
func (f *Of) Serves(gvk schema.GroupVersionKind) (bool, error) {
	answer, err := f.Target.Serves(f.Ctx, gvk)
	return answer.Served, err
}

// Secret reads the data of the target cluster's Secret namespace/name;
// nil when there is none. A value that is not base64 is an error naming
// the Secret and its key.
func (f *Of) Secret(namespace, name string) (map[string][]byte, error) {
	stub := &unstructured.Unstructured{}
	stub.SetAPIVersion("v1")
	stub.SetKind("Secret")
	stub.SetNamespace(namespace)
	stub.SetName(name)
	live, err := f.Target.Applier().Live(f.Ctx, namespace, []*unstructured.Unstructured{stub})
	if err != nil || len(live) == 0 {
		return nil, err
	}
	encoded, _, _ := unstructured.NestedStringMap(live[0].Object, "data")
	data := make(map[string][]byte, len(encoded))
	for k, v := range encoded {
		if data[k], err = base64.StdEncoding.DecodeString(v); err != nil {
			return nil, fmt.Errorf("secret %s/%s: key %s: %w", namespace, name, k, err)
		}
	}
	return data, nil
}

// Now is Clock's time.
func (f *Of) Now() time.Time { return f.Clock() }

// Base chooses the version of package name that a package extends within
// versionRange among Extensions (resolve.Base); none is a
// *resolve.BaseError.
func (f *Of) Base(name, versionRange string) (v1alpha1.ExtensionVersion, error) {
	v, missing := resolve.Base(f.Extensions, name, versionRange)
	if missing != nil {
		return v1alpha1.ExtensionVersion{}, missing
	}
	return *v, nil
}
