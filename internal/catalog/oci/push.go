package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/helm"
)

// PushOptions configure PushPackage.
type PushOptions struct {
	// PlainHTTP talks to the registry over HTTP instead of HTTPS. It is
	// refused unless the registry runs on this machine (localhost or a
	// loopback address): anywhere else it would expose the package and the
	// credentials on the network.
	PlainHTTP bool
	// Remote holds further go-containerregistry options: credentials
	// (remote.WithAuthFromKeychain), a transport, a context.
	Remote []remote.Option
	// Sign, when set, signs the pushed manifest as cosign does
	// (PushSignature), so that a catalog with a Cosign spec.verify
	// trusting the key's public half accepts it.
	Sign *SignOptions
}

// PushPackage stores a package archive in an OCI registry as Index and
// FetchArtifact read it back: an OCI image manifest with a config blob of
// media type MediaTypePackageConfig (the helm.PackageMetadata of its
// operator.yaml, as JSON) and one layer of media type
// MediaTypePackageContent (the archive as given), at
// <repository>/<name>:<operatorVersion>, a "+" in the version written "_"
// as Helm does. repository is oci://<registry>/<path>; a catalog whose
// spec.source.oci.repository is that URL lists the package.
//
// With o.Sign it then signs the manifest (PushSignature).
//
// It returns the pushed reference, oci://<registry>/<path>/<name>@<manifest
// digest>; the same archive always gives the same digest. An error names
// what to fix: an archive catalog.CheckArchive refuses, an operator.yaml a
// catalog would skip (see helm.AddPackageToIndex), a malformed
// repository, PlainHTTP for a remote registry, or the registry's answer.
func PushPackage(ctx context.Context, archive []byte, repository string, o PushOptions) (string, error) {
	if err := catalog.CheckArchive(archive, catalog.Limits{}); err != nil {
		return "", err
	}
	m, err := helm.PackageMetadataOf(archive)
	if err != nil {
		return "", err
	}
	if err := helm.CheckPackageEntry(m); err != nil {
		return "", err
	}
	repo, err := pushRepository(repository, m.Name, o.PlainHTTP)
	if err != nil {
		return "", err
	}
	config, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("package %s: %w", m.Name, err)
	}
	opts := append([]remote.Option{remote.WithContext(ctx)}, o.Remote...)
	var descs []v1.Descriptor
	for _, blob := range []struct {
		data []byte
		mt   types.MediaType
	}{{config, MediaTypePackageConfig}, {archive, MediaTypePackageContent}} {
		layer := static.NewLayer(blob.data, blob.mt)
		if err := remote.WriteLayer(repo, layer, opts...); err != nil {
			return "", fmt.Errorf("pushing to oci://%s: %w", repo.Name(), err)
		}
		digest, err := layer.Digest()
		if err != nil {
			return "", err
		}
		descs = append(descs, v1.Descriptor{MediaType: blob.mt, Digest: digest, Size: int64(len(blob.data))})
	}
	manifest, err := json.Marshal(v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        descs[0],
		Layers:        descs[1:],
	})
	if err != nil {
		return "", err
	}
	tag := repo.Tag(strings.ReplaceAll(m.OperatorVersion, "+", "_"))
	if err := remote.Put(tag, rawManifest(manifest), opts...); err != nil {
		return "", fmt.Errorf("pushing oci://%s: %w", tag.Name(), err)
	}
	digest := catalog.Digest(manifest)
	if o.Sign != nil {
		if err := PushSignature(repo, digest, *o.Sign, opts...); err != nil {
			return "", fmt.Errorf("signing oci://%s@%s: %w", repo.Name(), digest, err)
		}
	}
	return "oci://" + repo.Name() + "@" + digest, nil
}

// pushRepository is the repository a package called pkgName is pushed to:
// <repository>/<pkgName>.
func pushRepository(repository, pkgName string, plainHTTP bool) (name.Repository, error) {
	rest, ok := strings.CutPrefix(repository, "oci://")
	if !ok {
		return name.Repository{}, fmt.Errorf("%q: the destination is oci://<registry>/<repository>", repository)
	}
	var opts []name.Option
	if plainHTTP {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(strings.TrimSuffix(rest, "/")+"/"+pkgName, opts...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("%q: %v", repository, err)
	}
	if plainHTTP && !isLoopback(repo.RegistryStr()) {
		return name.Repository{}, fmt.Errorf("plain HTTP is only for a registry on this machine (localhost, 127.0.0.1, [::1]); %s is not one, so push over HTTPS", repo.RegistryStr())
	}
	return repo, nil
}

// isLoopback reports whether a registry host[:port] is this machine.
func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// rawManifest is a manifest pushed as written.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error)        { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
