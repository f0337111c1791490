package cli

import (
	"strings"
	"testing"
)

// The installation adopt helm writes, for a release on the hub and for
// one on a ManagedCluster stored apart from its objects.
func TestAdoptionFor(t *testing.T) {
	for _, c := range []struct {
		name string
		view AdoptView
		opts AdoptOptions
		want string
	}{
		// In the release's namespace: no target namespace, no storage
		// namespace; the version pinned, the values copied.
		{"hub", AdoptView{Release: "web", Namespace: "team-a", Extension: "web", Version: "1.2.0", Values: map[string]any{"replicas": 2}},
			AdoptOptions{Namespace: "team-a"}, `apiVersion: annex.dev/v1alpha1
kind: ExtensionInstallation
metadata:
  name: web
  namespace: team-a
spec:
  adopt:
    helm:
      release: web
  extension: web
  values:
    replicas: 2
  version: 1.2.0
`},
		// Elsewhere on the hub, for a ManagedCluster, stored in another
		// namespace (Flux's storageNamespace); no values.
		{"managed", AdoptView{Release: "web", Namespace: "team-b", Extension: "web", Version: "1.2.0"},
			AdoptOptions{Namespace: "flux-system", Cluster: "prod", InstallationNamespace: "platform"}, `apiVersion: annex.dev/v1alpha1
kind: ExtensionInstallation
metadata:
  name: web
  namespace: platform
spec:
  adopt:
    helm:
      release: web
      storageNamespace: flux-system
  cluster: prod
  extension: web
  targetNamespace: team-b
  version: 1.2.0
`},
	} {
		inst, err := AdoptionFor(&c.view, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := WriteObject(&out, OutputYAML, inst, ""); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}
