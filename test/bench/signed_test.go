package bench

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
	"github.com/annex-platform/annex/internal/verify"
)

// chartSource is where the system benchmark's manager reads the benchmark
// chart from.
type chartSource int

const (
	// fromHelmRepository: an in-process HTTP Helm repository, no policy
	// (the annex row of every earlier table).
	fromHelmRepository chartSource = iota
	// fromRegistry: an in-process OCI registry, no policy.
	fromRegistry
	// fromRegistrySigned: the same registry, the chart signed with a key
	// made for the run (cosign layout), and the Catalog under an Enforce
	// Cosign policy trusting that key: every installation's artifact is
	// verified before the engine sees it.
	fromRegistrySigned
)

// system names the row of s in results and the table.
func (s chartSource) system() string {
	switch s {
	case fromRegistry:
		return "annex-oci"
	case fromRegistrySigned:
		return "annex-signed"
	}
	return "annex"
}

// serveChart serves the benchmark chart from src for the length of the
// benchmark and returns the spec of a Catalog that reads it.
func serveChart(b *testing.B, src chartSource) v1alpha1.CatalogSpec {
	b.Helper()
	if src == fromHelmRepository {
		repo := helmrepo.NewServer(b, benchChart())
		return v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}
	}
	repository := "oci://" + catalogtest.NewRegistry(b) + "/charts"
	spec := v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OCI: &v1alpha1.OCISource{Repository: repository}}}
	var signKey []byte
	if src == fromRegistrySigned {
		private, public, err := verify.GenerateKeyPair()
		if err != nil {
			b.Fatal(err)
		}
		signKey = private
		spec.Verify = &v1alpha1.VerificationPolicy{
			Provider: v1alpha1.VerificationCosign, Mode: v1alpha1.VerificationEnforce,
			Cosign: &v1alpha1.CosignVerification{Keys: []v1alpha1.CosignKey{{Name: "bench", PublicKey: string(public)}}},
		}
	}
	pushOCIChart(b, repository, benchChart(), signKey)
	return spec
}

// pushOCIChart pushes chart as `helm push` stores it (config Chart.yaml as
// JSON, one chart layer) at <repository>/<name>:<version>, and signs it
// with signKey unless that is nil.
func pushOCIChart(b *testing.B, repository string, chart helmrepo.Chart, signKey []byte) {
	b.Helper()
	archive, err := helmrepo.Archive(chart)
	if err != nil {
		b.Fatal(err)
	}
	repo, err := name.NewRepository(strings.TrimPrefix(repository, "oci://") + "/" + chart.Name)
	if err != nil {
		b.Fatal(err)
	}
	config := []byte(`{"apiVersion":"v2","name":"` + chart.Name + `","version":"` + chart.Version + `"}`)
	var descs []v1.Descriptor
	for _, blob := range []struct {
		data []byte
		mt   types.MediaType
	}{{config, oci.MediaTypeHelmConfig}, {archive, oci.MediaTypeHelmChart}} {
		layer := static.NewLayer(blob.data, blob.mt)
		if err := remote.WriteLayer(repo, layer); err != nil {
			b.Fatal(err)
		}
		digest, _ := layer.Digest()
		descs = append(descs, v1.Descriptor{MediaType: blob.mt, Digest: digest, Size: int64(len(blob.data))})
	}
	manifest, err := json.Marshal(v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: descs[0], Layers: descs[1:]})
	if err != nil {
		b.Fatal(err)
	}
	desc := &remote.Descriptor{Manifest: manifest}
	desc.MediaType = types.OCIManifestSchema1
	if err := remote.Put(repo.Tag(chart.Version), desc); err != nil {
		b.Fatal(err)
	}
	if signKey != nil {
		if err := oci.PushSignature(repo, catalog.Digest(manifest), oci.SignOptions{Key: signKey}); err != nil {
			b.Fatal(err)
		}
	}
}

// describeSource is where a catalog source reads from, for messages.
func describeSource(s v1alpha1.CatalogSource) string {
	switch {
	case s.Helm != nil:
		return s.Helm.URL
	case s.OCI != nil:
		return s.OCI.Repository
	}
	return "?"
}

// requireVerified fails unless each of the n installations shows a
// verified cosign signature in status.artifact: the signed run measured
// verification, not an installation that skipped it.
func requireVerified(b *testing.B, c client.Client, n int) {
	b.Helper()
	var list v1alpha1.ExtensionInstallationList
	if err := c.List(b.Context(), &list, client.InNamespace(benchNamespace)); err != nil {
		b.Fatal(err)
	}
	verified := 0
	for _, inst := range list.Items {
		a := inst.Status.Artifact
		if a != nil && a.Verification != nil && a.Verification.Verified && a.Verification.Provider == v1alpha1.VerificationCosign {
			verified++
		}
	}
	if verified != n {
		b.Fatalf("%d of %d installations show a verified cosign signature in status.artifact", verified, n)
	}
}
