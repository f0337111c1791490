package helmrepo

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/annex-platform/annex/internal/catalog/oci"
)

// rawManifest is an OCI manifest pushed as written.
type rawManifest struct{ raw []byte }

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// PushOCI stores c in the OCI registry at registryHost (plain HTTP), at
// <repository>/<name>, as `helm push` does: a config blob holding
// Chart.yaml as JSON, one chart layer, tagged with the version (a "+"
// written "_").
func PushOCI(t testing.TB, registryHost, repository string, c Chart) {
	t.Helper()
	archive, err := Archive(c)
	if err != nil {
		t.Fatal(err)
	}
	config, err := json.Marshal(map[string]any{"apiVersion": "v2", "name": c.Name, "version": c.Version, "description": c.Description})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := name.NewRepository(registryHost + "/" + repository + "/" + c.Name)
	if err != nil {
		t.Fatal(err)
	}
	var descs []v1.Descriptor
	for _, blob := range []struct {
		data []byte
		mt   types.MediaType
	}{{config, oci.MediaTypeHelmConfig}, {archive, oci.MediaTypeHelmChart}} {
		layer := static.NewLayer(blob.data, blob.mt)
		if err := remote.WriteLayer(repo, layer); err != nil {
			t.Fatal(err)
		}
		digest, _ := layer.Digest()
		descs = append(descs, v1.Descriptor{MediaType: blob.mt, Digest: digest, Size: int64(len(blob.data))})
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": string(types.OCIManifestSchema1),
		"config": descs[0], "layers": []v1.Descriptor{descs[1]},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(repo.Tag(strings.ReplaceAll(c.Version, "+", "_")), rawManifest{manifest}); err != nil {
		t.Fatal(err)
	}
}
