package cli_test

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/verify"
)

// TestKeygenAndSignedPush: keygen writes a key pair (the private half
// readable by its owner only, never overwritten unasked); push
// --sign-key stores a cosign signature its public half verifies; a key
// that cannot sign is refused before anything is pushed.
func TestKeygenAndSignedPush(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "release")
	var out bytes.Buffer
	if err := cli.Keygen(cli.KeygenOptions{Prefix: prefix, Out: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "key fingerprint sha256:") {
		t.Errorf("keygen output:\n%s", out.String())
	}
	st, err := os.Stat(prefix + ".key")
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("private key file: %v, %v", st, err)
	}
	if err := cli.Keygen(cli.KeygenOptions{Prefix: prefix, Out: io.Discard}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("keygen over existing files: %v", err)
	}
	pub, err := os.ReadFile(prefix + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	key, err := verify.ParseKey("release", pub)
	if err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()

	// The public key is no signing key: refused, and nothing pushed.
	err = cli.Push(ctx, cli.PushOptions{Source: greeter, Destination: "oci://" + host + "/bad", PlainHTTP: true, SignKey: prefix + ".pub", Out: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "--sign-key") {
		t.Fatalf("push with a public key: %v", err)
	}
	if tags, err := remote.List(mustRepo(t, host+"/bad/greeter")); err == nil && len(tags) > 0 {
		t.Fatalf("pushed %v although the key was refused", tags)
	}

	out.Reset()
	if err := cli.Push(ctx, cli.PushOptions{Source: greeter, Destination: "oci://" + host + "/packages", PlainHTTP: true, SignKey: prefix + ".key", Out: &out}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "signed it with key "+key.Fingerprint) {
		t.Fatalf("push output:\n%s", out.String())
	}
	ref := strings.TrimPrefix(lines[0], "pushed ")
	sigs, err := oci.CosignSignatures(ctx, &catalog.Fetcher{}, v1alpha1.ArtifactSource{URL: ref})
	if err != nil {
		t.Fatal(err)
	}
	digest, err := oci.ManifestDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	id, err := verify.Verify(verify.Artifact{Ref: ref, Digest: digest}, []verify.Key{key}, sigs)
	if err != nil || id.Key.Name != "release" {
		t.Fatalf("the pushed signature does not verify: %v", err)
	}
}

func mustRepo(t *testing.T, s string) name.Repository {
	t.Helper()
	r, err := name.NewRepository(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
