package localcluster

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The dev registry serves what was pushed to it after a restart, on the
// same port: blobs from disk, manifests and tags from the journal, in
// order, a deleted tag staying deleted; a torn last journal line is
// dropped.
func TestRegistryKeepsWhatWasPushed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "registry")
	var log bytes.Buffer
	reg, err := StartRegistry(dir, 0, &log)
	if err != nil {
		t.Fatal(err)
	}
	host := reg.Host
	repo, err := name.NewRepository(host + "/packages/greeter")
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := img.Digest()
	for _, tag := range []string{"1.0.0", "gone"} {
		if err := remote.Write(repo.Tag(tag), img); err != nil {
			t.Fatal(err)
		}
	}
	if err := remote.Delete(repo.Tag("gone")); err != nil {
		t.Fatal(err)
	}
	if err := reg.Stop(); err != nil {
		t.Fatal(err)
	}

	// A write torn by a kill: half a line at the end of the journal.
	journal := filepath.Join(dir, "manifests.jsonl")
	f, err := os.OpenFile(journal, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"method":"PUT","path":"/v2/packa`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	reg, err = StartRegistry(dir, 0, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Stop() })
	if reg.Host != host {
		t.Errorf("restarted on %s, want the remembered %s", reg.Host, host)
	}
	got, err := remote.Image(repo.Tag("1.0.0"))
	if err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	if d, _ := got.Digest(); d != digest {
		t.Errorf("after a restart the tag names %s, want %s", d, digest)
	}
	layers, err := got.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[1].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, rc); err != nil {
		t.Errorf("reading a blob after a restart: %v", err)
	}
	rc.Close()
	if _, err := remote.Image(repo.Tag("gone")); err == nil {
		t.Error("a tag deleted before the restart is served again")
	}
	if log.Len() > 0 {
		t.Errorf("the registry logged:\n%s", log.String())
	}
}
