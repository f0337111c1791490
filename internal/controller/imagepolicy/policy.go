// Package imagepolicy is the image-policy hook shipped with Annex: it
// judges an installation's change by the container images it runs. It
// answers ImagePolicyReviews, the resources Annex creates for the Hooks
// that the built-in extension image-policy registers (the Hook contract
// is in api/v1alpha1 Hook), and is written to be read as the template
// of a hook: read spec.annex, decide, answer in status.conditions.
//
// This file is the decision, pure: images and a policy in, a verdict out.
package imagepolicy

import (
	"fmt"
	"strings"
)

// Annotations on a Hook that carry its policy; the image-policy chart
// writes them from its values.
const (
	// AnnotationAllowedRegistries lists, comma-separated, the registries
	// (or registry/path prefixes) images may come from; empty allows
	// every registry.
	AnnotationAllowedRegistries = "imagepolicy.annex.dev/allowed-registries"
	// AnnotationRequireDigest "true" refuses images not pinned by digest.
	AnnotationRequireDigest = "imagepolicy.annex.dev/require-digest"
)

// Policy says which images an installation may run.
type Policy struct {
	// AllowedRegistries are registries ("ghcr.io") or prefixes of
	// repositories ("ghcr.io/acme"); empty allows every registry.
	AllowedRegistries []string
	// RequireDigest refuses images without an @sha256: digest.
	RequireDigest bool
}

// PolicyOf reads a Policy from a Hook's annotations.
func PolicyOf(annotations map[string]string) Policy {
	var p Policy
	for _, r := range strings.Split(annotations[AnnotationAllowedRegistries], ",") {
		if r = strings.TrimSuffix(strings.TrimSpace(r), "/"); r != "" {
			p.AllowedRegistries = append(p.AllowedRegistries, r)
		}
	}
	p.RequireDigest = strings.TrimSpace(annotations[AnnotationRequireDigest]) == "true"
	return p
}

// Evaluate judges images: ok when every one is allowed; otherwise the
// message names each offending image and why, in the order given, and
// what to change.
func Evaluate(images []string, p Policy) (ok bool, message string) {
	var offences []string
	for _, image := range images {
		var why []string
		if len(p.AllowedRegistries) > 0 && !allowed(image, p.AllowedRegistries) {
			why = append(why, "not from an allowed registry")
		}
		if p.RequireDigest && !strings.Contains(image, "@sha256:") {
			why = append(why, "not pinned by digest")
		}
		if len(why) > 0 {
			offences = append(offences, fmt.Sprintf("%s (%s)", image, strings.Join(why, ", ")))
		}
	}
	if len(offences) == 0 {
		return true, fmt.Sprintf("%s allowed", countImages(len(images)))
	}
	msg := fmt.Sprintf("%d of %s not allowed: %s", len(offences), countImages(len(images)), strings.Join(offences, "; "))
	if len(p.AllowedRegistries) > 0 {
		msg += fmt.Sprintf("; allowed registries: %s", strings.Join(p.AllowedRegistries, ", "))
	}
	return false, msg + "; choose allowed images in the installation's spec.values, or change the policy (the Hook's " + AnnotationAllowedRegistries + " and " + AnnotationRequireDigest + " annotations)"
}

// allowed reports whether image's full repository lies under one of the
// prefixes (whole path components only).
func allowed(image string, prefixes []string) bool {
	repo := registryOf(image) + "/" + pathOf(image)
	for _, p := range prefixes {
		if repo == p || strings.HasPrefix(repo, p+"/") {
			return true
		}
	}
	return false
}

// registryOf returns the registry of an image reference as a container
// runtime reads it: the first path component when it has a dot or a port
// or is localhost, else docker.io.
func registryOf(image string) string {
	first, _, found := strings.Cut(image, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first
	}
	return "docker.io"
}

// pathOf returns the repository path of an image, without registry, tag
// or digest ("library/nginx" for "nginx:1").
func pathOf(image string) string {
	rest := image
	if first, after, found := strings.Cut(image, "/"); found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		rest = after
	}
	rest, _, _ = strings.Cut(rest, "@")
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		rest = rest[:i]
	}
	if !strings.Contains(rest, "/") && registryOf(image) == "docker.io" {
		rest = "library/" + rest
	}
	return rest
}

// countImages is "1 image" or "<n> images".
func countImages(n int) string {
	if n == 1 {
		return "1 image"
	}
	return fmt.Sprintf("%d images", n)
}
