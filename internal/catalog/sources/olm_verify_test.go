package sources_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/verify"
)

// pushCatalogImage pushes an OLM catalog image at ref (host/repo:tag)
// whose /configs holds one package, pkg, with one bundle inline, signed
// with each of keys, and returns its digest.
func pushCatalogImage(t *testing.T, ref, pkg string, keys ...signingKey) string {
	t.Helper()
	csv := base64.StdEncoding.EncodeToString([]byte(`{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":"` + pkg + `.v1.0.0"},"spec":{"version":"1.0.0"}}`))
	fbc := `{"schema":"olm.package","name":"` + pkg + `","defaultChannel":"alpha"}
{"schema":"olm.channel","package":"` + pkg + `","name":"alpha","entries":[{"name":"` + pkg + `.v1.0.0"}]}
{"schema":"olm.bundle","package":"` + pkg + `","name":"` + pkg + `.v1.0.0","properties":[{"type":"olm.package","value":{"packageName":"` + pkg + `","version":"1.0.0"}},{"type":"olm.bundle.object","value":{"data":"` + csv + `"}}]}
`
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "configs/catalog.json", Mode: 0o644, Size: int64(len(fbc)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(fbc)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(buf.Bytes(), types.OCIUncompressedLayer))
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := oci.PushSignature(tag.Context(), d.String(), oci.SignOptions{Key: k.private}); err != nil {
			t.Fatal(err)
		}
	}
	return d.String()
}

// TestVerifierOLMCatalogImage: an olm catalog's image is verified before
// a sync reads it, and the sync reads the digest verified; an unsigned
// image is refused under Enforce and read under Audit; a bundle inline
// in a signed catalog image is verified by the image's signature, and
// one inline in a catalog read from a folder is unsigned.
func TestVerifierOLMCatalogImage(t *testing.T) {
	host := catalogtest.NewRegistry(t)
	release := newSigningKey(t)
	signedDigest := pushCatalogImage(t, host+"/catalogs/signed:latest", "signed-op", release)
	pushCatalogImage(t, host+"/catalogs/unsigned:latest", "unsigned-op")

	key := v1alpha1.CosignKey{Name: "release", PublicKey: string(release.public)}
	olmImage := func(image string, mode v1alpha1.VerificationMode) *v1alpha1.Catalog {
		return &v1alpha1.Catalog{Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OLM: &v1alpha1.OLMSource{Image: image}}, Verify: cosignPolicy(mode, key)}}
	}
	lookup := catalogtest.Lookup{Catalogs: map[string]*v1alpha1.Catalog{
		"signed":         olmImage(host+"/catalogs/signed:latest", v1alpha1.VerificationEnforce),
		"unsigned":       olmImage(host+"/catalogs/unsigned:latest", v1alpha1.VerificationEnforce),
		"unsigned-audit": olmImage(host+"/catalogs/unsigned:latest", v1alpha1.VerificationAudit),
		"folder":         {Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OLM: &v1alpha1.OLMSource{Path: t.TempDir()}}, Verify: cosignPolicy("", key)}},
	}}
	for n, c := range lookup.Catalogs {
		c.Name = n
	}
	f := &catalog.Fetcher{Lookup: lookup}
	v := &sources.Verifier{Fetcher: f, Lookup: lookup, Cache: &verify.Cache{}}
	cats := &sources.Catalogs{Fetcher: f, Lookup: lookup, VerifyImage: v.VerifyCatalogImage}
	ctx := context.Background()

	index, err := cats.Index(ctx, lookup.Catalogs["signed"])
	if err != nil {
		t.Fatal(err)
	}
	if index.Digest != signedDigest || len(index.Packages) != 1 {
		t.Fatalf("signed catalog image: digest %s, %d packages; want %s, 1", index.Digest, len(index.Packages), signedDigest)
	}
	_, err = cats.Index(ctx, lookup.Catalogs["unsigned"])
	var refused *sources.CatalogImageRefusedError
	if !errors.As(err, &refused) || refused.Reason != v1alpha1.ReasonSignatureMissing || !strings.Contains(err.Error(), `the catalog image of catalog "unsigned"`) {
		t.Fatalf("unsigned catalog image under Enforce: got %v, want refused (SignatureMissing)", err)
	}
	if index, err := cats.Index(ctx, lookup.Catalogs["unsigned-audit"]); err != nil || len(index.Packages) != 1 {
		t.Fatalf("unsigned catalog image under Audit: got %v", err)
	}

	// The bundle inline in the signed image: the image's signer.
	bundleURL := index.Packages[0].Spec.Versions[0].Source.URL
	got, err := v.Verify(ctx, "signed-op 1.0.0", v1alpha1.ArtifactSource{Catalog: "signed", URL: bundleURL}, "")
	if err != nil || got == nil || !got.Verified || !strings.Contains(got.Identity, `key "release"`) {
		t.Fatalf("inline bundle %s: got %+v, %v", bundleURL, got, err)
	}
	// A bundle inline in a catalog read from a folder has no signature.
	got, err = v.Verify(ctx, "x 1.0.0", v1alpha1.ArtifactSource{Catalog: "folder", URL: "olm://folder/x/x.v1.0.0"}, "")
	if err != nil || got == nil || got.Verified || got.Reason != v1alpha1.ReasonSignatureMissing || !strings.Contains(got.Message, "publish the catalog as an image and sign it") {
		t.Fatalf("inline bundle of a folder catalog: got %+v, %v", got, err)
	}
}
