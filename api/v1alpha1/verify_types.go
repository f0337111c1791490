package v1alpha1

// VerificationProvider names who vouches for an artifact: a signature
// scheme, or the Annex binary itself for the built-in catalog.
type VerificationProvider string

const (
	// VerificationCosign verifies cosign signatures of OCI artifacts with
	// public keys (spec.verify.cosign.keys).
	VerificationCosign VerificationProvider = "Cosign"
	// VerificationHelmProvenance verifies the provenance file
	// (<chart URL>.prov, `helm package --sign`) of charts from HTTP Helm
	// repositories with an OpenPGP keyring (spec.verify.helmProvenance).
	VerificationHelmProvenance VerificationProvider = "HelmProvenance"
	// VerificationNotation verifies Notation signatures (`notation sign`)
	// of OCI artifacts with an X.509 trust store and trust policy
	// (spec.verify.notation).
	VerificationNotation VerificationProvider = "Notation"
	// VerificationBuiltin is the built-in catalog's: its artifacts are part
	// of the Annex binary and trusted as such, under any policy.
	VerificationBuiltin VerificationProvider = "Builtin"
)

// VerificationMode says what Annex does with an artifact whose signature
// is missing or not trusted.
type VerificationMode string

const (
	// VerificationEnforce refuses it: the installation stops with a
	// terminal condition before anything is applied.
	VerificationEnforce VerificationMode = "Enforce"
	// VerificationAudit installs it and reports the failure (condition
	// Verified False, an Event, status.artifact.verification).
	VerificationAudit VerificationMode = "Audit"
)

// VerificationPolicy is a catalog's signature policy: who must have signed
// an artifact before Annex hands it to an engine. Verification happens
// when an installation fetches a version, once per artifact digest, and
// for an olm catalog's image before each sync reads it.
// The providers are Cosign (public keys, or keyless certificates) and
// Notation (an X.509 trust store and trusted identities), for artifacts
// in OCI registries (charts, packages, OLM bundle and catalog images),
// and HelmProvenance with an OpenPGP keyring, for charts from HTTP Helm
// repositories; an artifact the provider cannot verify (a chart
// from an HTTP repository under a Cosign policy) counts as unsigned: refused under
// Enforce, reported under Audit, never silently accepted. The built-in
// catalog is part of the binary and never refused.
// +kubebuilder:validation:XValidation:rule="self.provider != 'Cosign' || has(self.cosign)",message="spec.verify.cosign: required when spec.verify.provider is Cosign"
// +kubebuilder:validation:XValidation:rule="self.provider != 'HelmProvenance' || has(self.helmProvenance)",message="spec.verify.helmProvenance: required when spec.verify.provider is HelmProvenance"
// +kubebuilder:validation:XValidation:rule="self.provider != 'Notation' || has(self.notation)",message="spec.verify.notation: required when spec.verify.provider is Notation"
type VerificationPolicy struct {
	// Provider is the signature scheme: Cosign (keys or keyless),
	// Notation (X.509) or HelmProvenance (OpenPGP).
	// +kubebuilder:validation:Enum=Cosign;Notation;HelmProvenance
	// +required
	Provider VerificationProvider `json:"provider"`
	// Mode is Enforce (refuse what is unsigned or signed by someone else)
	// or Audit (install it and report).
	// +kubebuilder:validation:Enum=Enforce;Audit
	// +kubebuilder:default=Enforce
	// +optional
	Mode VerificationMode `json:"mode,omitempty"`
	// Cosign holds the public keys a cosign signature must verify with,
	// or the keyless policy.
	// +optional
	Cosign *CosignVerification `json:"cosign,omitempty"`

	// HelmProvenance holds the OpenPGP keyrings a chart's provenance file
	// must be signed with.
	// +optional
	HelmProvenance *HelmProvenanceVerification `json:"helmProvenance,omitempty"`

	// Notation holds the trust store and the trust policy a Notation
	// signature must satisfy.
	// +optional
	Notation *NotationVerification `json:"notation,omitempty"`
}

// NotationVerification is a Notation trust policy for a catalog's OCI
// artifacts (registry scope: all of them): a signature is accepted when
// its certificate chain ends at a certificate of one of TrustStores and
// its signing certificate's subject is one of TrustedIdentities, checked
// by notation-go at Level. Verification is offline: revocation (OCSP,
// CRL) is not checked, as the hub may have no route to the CA. Trusting
// two certificates at once rotates a signing certificate without
// downtime.
type NotationVerification struct {
	// TrustStores are the named X.509 trust stores (notation's
	// `ca:<name>` or `signingAuthority:<name>`): root certificates a
	// signature's chain must end at.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +required
	TrustStores []NotationTrustStore `json:"trustStores"`
	// TrustedIdentities are the signers trusted, as in a Notation trust
	// policy: `x509.subject: C=US, ST=WA, O=Example, CN=release` (the signing
	// certificate's whole subject, in any order of its attributes), or
	// "*" for any certificate that chains to a trust store.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.all(i, i == '*' || i.startsWith('x509.subject:'))",message="each identity is \"*\" or \"x509.subject: <distinguished name>\" (e.g. \"x509.subject: C=US, ST=WA, O=Example, CN=release\")"
	// +kubebuilder:validation:XValidation:rule="!self.exists(i, i == '*') || size(self) == 1",message="\"*\" trusts every certificate of the trust stores and must be the only identity"
	// +required
	TrustedIdentities []string `json:"trustedIdentities"`
	// Level is Notation's verification level: Strict (integrity,
	// authenticity and certificate expiry enforced) or Permissive
	// (an expired certificate is accepted and logged). What Annex does
	// with an unsigned or untrusted artifact is spec.verify.mode.
	// +kubebuilder:validation:Enum=Strict;Permissive
	// +kubebuilder:default=Strict
	// +optional
	Level NotationLevel `json:"level,omitempty"`
}

// NotationLevel is a Notation verification level.
type NotationLevel string

const (
	// NotationStrict enforces integrity, authenticity and expiry.
	NotationStrict NotationLevel = "Strict"
	// NotationPermissive enforces integrity and authenticity, and logs an
	// expired certificate.
	NotationPermissive NotationLevel = "Permissive"
)

// NotationTrustStore is one named X.509 trust store: PEM certificates
// given inline, in a Secret or in a ConfigMap.
// +kubebuilder:validation:XValidation:rule="[has(self.certificates), has(self.secretRef), has(self.configMapRef)].filter(x, x).size() == 1",message="set exactly one of certificates, secretRef or configMapRef"
type NotationTrustStore struct {
	// Name identifies the trust store in status and messages.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`
	// Type is the trust store's type in Notation's words: CA (the chain
	// ends at one of its certificates; `notation sign` with a CA-issued
	// certificate) or SigningAuthority (the notary.x509.signingAuthority
	// signing scheme).
	// +kubebuilder:validation:Enum=CA;SigningAuthority
	// +kubebuilder:default=CA
	// +optional
	Type NotationTrustStoreType `json:"type,omitempty"`
	// Certificates are the PEM certificates of the store.
	// +kubebuilder:validation:MaxLength=65536
	// +kubebuilder:validation:XValidation:rule="self.contains('-----BEGIN CERTIFICATE-----')",message="must hold PEM certificates (-----BEGIN CERTIFICATE-----)"
	// +optional
	Certificates string `json:"certificates,omitempty"`
	// SecretRef names a Secret holding the PEM certificates under Key.
	// +optional
	SecretRef *CertificatesReference `json:"secretRef,omitempty"`
	// ConfigMapRef names a ConfigMap holding the PEM certificates under
	// Key.
	// +optional
	ConfigMapRef *CertificatesReference `json:"configMapRef,omitempty"`
}

// NotationTrustStoreType is a Notation trust store type.
type NotationTrustStoreType string

const (
	// NotationCA is a trust store of certificate authorities.
	NotationCA NotationTrustStoreType = "CA"
	// NotationSigningAuthority is a trust store of signing authorities.
	NotationSigningAuthority NotationTrustStoreType = "SigningAuthority"
)

// CertificatesReference names the key of a Secret or ConfigMap holding
// PEM certificates.
type CertificatesReference struct {
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	// +required
	Namespace string `json:"namespace"`
	// Key is the data key holding the PEM certificates.
	// +kubebuilder:default="ca.crt"
	// +optional
	Key string `json:"key,omitempty"`
}

// HelmProvenanceVerification trusts provenance files (`helm package
// --sign`, `helm verify`) signed by any key of Keyrings. As for cosign
// keys, trusting two keyrings at once rotates a key without downtime.
type HelmProvenanceVerification struct {
	// Keyrings are the trusted OpenPGP public keys; a provenance file
	// signed by any of them is accepted, and the installation shows the
	// keyring's name and the signer's user ID.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +required
	Keyrings []OpenPGPKeyring `json:"keyrings"`
}

// OpenPGPKeyring is one trusted OpenPGP keyring (one or more public
// keys), given inline (ASCII-armored) or in a Secret (armored or binary,
// as `gpg --export` writes it).
// +kubebuilder:validation:XValidation:rule="has(self.keyring) != has(self.secretRef)",message="set exactly one of keyring or secretRef"
type OpenPGPKeyring struct {
	// Name identifies the keyring in status and messages.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`
	// Keyring is the ASCII-armored public key block (`gpg --export
	// --armor`).
	// +kubebuilder:validation:MaxLength=65536
	// +kubebuilder:validation:XValidation:rule="self.contains('-----BEGIN PGP PUBLIC KEY BLOCK-----')",message="must be an ASCII-armored OpenPGP public key block (-----BEGIN PGP PUBLIC KEY BLOCK-----)"
	// +optional
	Keyring string `json:"keyring,omitempty"`
	// SecretRef names a Secret holding the keyring under Key.
	// +optional
	SecretRef *KeyringSecretReference `json:"secretRef,omitempty"`
}

// KeyringSecretReference names the key of a Secret holding an OpenPGP
// keyring.
type KeyringSecretReference struct {
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	// +required
	Namespace string `json:"namespace"`
	// Key is the Secret's data key holding the keyring.
	// +kubebuilder:default="pubring.gpg"
	// +optional
	Key string `json:"key,omitempty"`
}

// CosignVerification trusts cosign signatures made with any of Keys, or,
// keyless, with a certificate for one of Keyless's identities. Trusting
// two keys at once rotates a key without downtime: add the new one,
// re-sign or publish with it, then remove the old one.
// +kubebuilder:validation:XValidation:rule="has(self.keys) != has(self.keyless)",message="set exactly one of keys or keyless"
type CosignVerification struct {
	// Keys are the trusted public keys; a signature by any of them is
	// accepted and the installation shows the key's name.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	Keys []CosignKey `json:"keys,omitempty"`

	// Keyless trusts keyless signatures: a certificate (the signature
	// layer's dev.sigstore.cosign/certificate and chain annotations)
	// that chains to one of TrustedRoots and names one of Identities.
	// Verified offline: the transparency log (Rekor) is not consulted.
	// +optional
	Keyless *KeylessVerification `json:"keyless,omitempty"`
}

// KeylessVerification is a keyless cosign policy, checked offline
// against roots the administrator supplies (the hub may have no route to
// a public Sigstore instance).
type KeylessVerification struct {
	// TrustedRoots are the PEM certificates of the root CAs (e.g. your
	// Fulcio's root); a signing certificate must chain to one of them,
	// through the intermediates the signature carries, at the time it was
	// issued.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +kubebuilder:validation:XValidation:rule="self.contains('-----BEGIN CERTIFICATE-----')",message="must hold PEM certificates (-----BEGIN CERTIFICATE-----)"
	// +required
	TrustedRoots string `json:"trustedRoots"`
	// Identities are the signers trusted: a certificate whose OIDC issuer
	// and subject (URI or email SAN) match one of them is accepted.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +required
	Identities []KeylessIdentity `json:"identities"`
}

// KeylessIdentity is one trusted signer: an issuer and a subject, each
// exact or a regular expression matched against the whole value.
// +kubebuilder:validation:XValidation:rule="has(self.issuer) != has(self.issuerRegExp)",message="set exactly one of issuer or issuerRegExp"
// +kubebuilder:validation:XValidation:rule="has(self.subject) != has(self.subjectRegExp)",message="set exactly one of subject or subjectRegExp"
type KeylessIdentity struct {
	// Issuer is the OIDC issuer the certificate names (Fulcio's extension
	// 1.3.6.1.4.1.57264.1.8, or the older 1.3.6.1.4.1.57264.1.1), e.g.
	// https://token.actions.githubusercontent.com.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Issuer string `json:"issuer,omitempty"`
	// IssuerRegExp is a Go regular expression the issuer must match.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	IssuerRegExp string `json:"issuerRegExp,omitempty"`
	// Subject is the certificate's URI SAN (a workflow's URL) or email
	// SAN.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Subject string `json:"subject,omitempty"`
	// SubjectRegExp is a Go regular expression the subject must match.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	SubjectRegExp string `json:"subjectRegExp,omitempty"`
}

// CosignKey is one trusted public key, given inline or in a Secret.
// +kubebuilder:validation:XValidation:rule="has(self.publicKey) != has(self.secretRef)",message="set exactly one of publicKey or secretRef"
type CosignKey struct {
	// Name identifies the key in status and messages, e.g. release-2026.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`
	// PublicKey is the PEM public key (cosign.pub, `annexctl package
	// keygen`'s .pub file): ECDSA, RSA or Ed25519.
	// +kubebuilder:validation:MaxLength=8192
	// +kubebuilder:validation:XValidation:rule="self.contains('-----BEGIN PUBLIC KEY-----')",message="must be a PEM public key (-----BEGIN PUBLIC KEY-----)"
	// +optional
	PublicKey string `json:"publicKey,omitempty"`
	// SecretRef names a Secret holding the PEM public key under Key.
	// +optional
	SecretRef *PublicKeySecretReference `json:"secretRef,omitempty"`
}

// PublicKeySecretReference names the key of a Secret holding a PEM public
// key.
type PublicKeySecretReference struct {
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	// +required
	Namespace string `json:"namespace"`
	// Key is the Secret's data key holding the PEM public key.
	// +kubebuilder:default="cosign.pub"
	// +optional
	Key string `json:"key,omitempty"`
}

// ArtifactStatus is the artifact of the version an installation last
// fetched: what it is and who vouched for it.
type ArtifactStatus struct {
	// Version of the extension the artifact holds.
	Version string `json:"version"`
	// URL the artifact was fetched from (for OCI, it names the manifest
	// digest the signature covers).
	// +optional
	URL string `json:"url,omitempty"`
	// Digest is the sha256 of the artifact as fetched.
	// +optional
	Digest string `json:"digest,omitempty"`
	// Verification is who signed it, as the catalog's spec.verify asked;
	// absent when the catalog asks for no verification.
	// +optional
	Verification *ArtifactVerification `json:"verification,omitempty"`
}

// ArtifactVerification is the outcome of verifying one artifact.
type ArtifactVerification struct {
	// Provider is what vouched for the artifact: Cosign, Notation,
	// HelmProvenance, or Builtin for the built-in catalog.
	Provider VerificationProvider `json:"provider"`
	// Mode is the policy's mode when the artifact was verified.
	// +optional
	Mode VerificationMode `json:"mode,omitempty"`
	// Verified is true when a trusted identity signed this very artifact.
	Verified bool `json:"verified"`
	// Identity is the signer, e.g. `key "release-2026" (sha256:3f2a…)`,
	// or for Notation `x509.subject "CN=release,O=Example,ST=WA,C=US"`.
	// +optional
	Identity string `json:"identity,omitempty"`
	// Reason is why it is not verified: SignatureMissing,
	// SignatureInvalid, IdentityMismatch or VerificationPolicyInvalid.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says what was found and what to do.
	// +optional
	Message string `json:"message,omitempty"`
}
