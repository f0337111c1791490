// Package verify checks who signed an artifact before an engine sees it:
// today, cosign "simple signing" signatures made with public keys (cosign
// sign --key, annexctl package push --sign-key), as cosign stores them
// next to an OCI artifact, at the tag sha256-<manifest hex>.sig.
//
// It is a pure core: the caller fetches the signature manifest and its
// payload blobs (internal/catalog/oci) and reads the policy's keys; this
// package parses what it is given (ParseSignatureManifest, the payload
// JSON), verifies the signatures with sigstore's signature library
// against the trusted keys, and returns the signer's Identity or an
// *Error whose Reason is SignatureMissing, SignatureInvalid or
// IdentityMismatch. It writes no cryptography of its own. Cache keeps
// verified identities by artifact digest and key set, so that an
// artifact is verified once.
package verify
