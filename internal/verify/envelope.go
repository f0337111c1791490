package verify

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// The cosign signature layout (tag-based discovery): the signatures of the
// manifest sha256:<hex> are the layers of the manifest tagged
// sha256-<hex>.sig in the same repository, one layer each, whose blob is
// the payload and whose annotation AnnotationSignature its signature.
const (
	// MediaTypeSimpleSigning is the media type of a signature layer: the
	// signed payload, JSON.
	MediaTypeSimpleSigning = "application/vnd.dev.cosign.simplesigning.v1+json"
	// AnnotationSignature on a signature layer is the base64 signature of
	// its blob.
	AnnotationSignature = "dev.cosignproject.cosign/signature"
	// PayloadType is critical.type of a cosign payload.
	PayloadType = "cosign container image signature"
	// OptionalKey in a payload's optional part names the fingerprint of
	// the key annexctl signed with: unverified until a trusted key
	// verifies the signature, it only helps name the signer when none
	// does.
	OptionalKey = "annex.dev/key"
)

// MaxPayloadBytes bounds one payload blob: a payload is a few hundred
// bytes of JSON.
const MaxPayloadBytes = 64 << 10

// maxLayers bounds the signatures of one artifact.
const maxLayers = 64

var digestRE = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// SignatureTag is the tag of the signatures of the manifest digest
// ("sha256:<hex>" → "sha256-<hex>.sig").
func SignatureTag(digest string) string {
	return strings.Replace(digest, ":", "-", 1) + ".sig"
}

// Layer is one signature as the signature manifest lists it: the digest
// and size of its payload blob and its base64 signature.
type Layer struct {
	Digest string
	Size   int64
	// Signature is the annotation's base64 text, decoded by Verify.
	Signature string
	// Certificate and Chain are the PEM annotations of a keyless
	// signature, "" for a keyed one.
	Certificate, Chain string
}

// signatureManifest is the part of the signature manifest read here.
type signatureManifest struct {
	Layers []struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations"`
	} `json:"layers"`
}

// ParseSignatureManifest reads the signature layers of a cosign
// signature manifest: those of media type MediaTypeSimpleSigning with a
// sha256 digest, a size within MaxPayloadBytes and a signature
// annotation. Layers of other media types are skipped (cosign
// attachments). An error means the manifest is not JSON, lists more than
// 64 layers, or a signing layer is malformed; it names the layer.
func ParseSignatureManifest(raw []byte) ([]Layer, error) {
	var m signatureManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("the signature manifest is not JSON: %v", err)
	}
	if len(m.Layers) > maxLayers {
		return nil, fmt.Errorf("the signature manifest lists %d layers, more than %d", len(m.Layers), maxLayers)
	}
	var out []Layer
	for i, l := range m.Layers {
		if l.MediaType != MediaTypeSimpleSigning {
			continue
		}
		switch {
		case !digestRE.MatchString(l.Digest):
			return nil, fmt.Errorf("signature layer %d: digest %q is not sha256:<hex>", i, l.Digest)
		case l.Size <= 0 || l.Size > MaxPayloadBytes:
			return nil, fmt.Errorf("signature layer %d: size %d is not between 1 and %d bytes", i, l.Size, MaxPayloadBytes)
		case l.Annotations[AnnotationSignature] == "":
			return nil, fmt.Errorf("signature layer %d: no %s annotation", i, AnnotationSignature)
		}
		out = append(out, Layer{Digest: l.Digest, Size: l.Size, Signature: l.Annotations[AnnotationSignature],
			Certificate: l.Annotations[AnnotationCertificate], Chain: l.Annotations[AnnotationChain]})
	}
	return out, nil
}

// Payload is what a cosign simple-signing payload says.
type Payload struct {
	// Reference is critical.identity.docker-reference: the repository the
	// signer named.
	Reference string
	// Digest is critical.image.docker-manifest-digest: the manifest signed.
	Digest string
	// ClaimedKey is optional["annex.dev/key"], a fingerprint the signer
	// wrote; "" when absent. It is not proof of anything.
	ClaimedKey string
}

// payloadJSON is the simple-signing payload as JSON.
type payloadJSON struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional map[string]any `json:"optional"`
}

// ParsePayload reads a cosign simple-signing payload. An error means it
// is not JSON, its critical.type is not PayloadType, or its
// docker-manifest-digest is not sha256:<hex>.
func ParsePayload(raw []byte) (Payload, error) {
	var p payloadJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return Payload{}, fmt.Errorf("the payload is not JSON: %v", err)
	}
	if p.Critical.Type != PayloadType {
		return Payload{}, fmt.Errorf("the payload's critical.type is %q, not %q", p.Critical.Type, PayloadType)
	}
	d := p.Critical.Image.DockerManifestDigest
	if !digestRE.MatchString(d) {
		return Payload{}, fmt.Errorf("the payload's critical.image.docker-manifest-digest %q is not sha256:<hex>", d)
	}
	out := Payload{Reference: p.Critical.Identity.DockerReference, Digest: d}
	if k, ok := p.Optional[OptionalKey].(string); ok && digestRE.MatchString(k) {
		out.ClaimedKey = k
	}
	return out, nil
}

// decodeSignature decodes a signature annotation (standard base64, as
// cosign writes it).
func decodeSignature(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("the signature annotation is not base64: %v", err)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("the signature annotation is empty")
	}
	return b, nil
}
