package bundle

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CertManagerIssuer has cert-manager issue the serving certificates of an
// operator's webhooks and aggregated APIs (Options.CertManager), in place
// of the CA Annex keeps itself.
type CertManagerIssuer struct {
	// Name and Kind (Issuer, in the install namespace, or ClusterIssuer)
	// name the issuer that signs the serving certificates. An empty Name
	// has the installation's own CA issue them: a self-signed Issuer
	// <Name>-selfsigned signs the CA Certificate <Name>-webhook-ca, whose
	// Secret backs the CA Issuer <Name>-webhook-ca.
	Name, Kind string
}

// AnnotationInjectCAFrom is cert-manager's CA injector annotation: it
// writes the CA of Certificate <namespace>/<name> into the caBundle of
// the webhook configuration, CRD conversion or APIService it is on.
const AnnotationInjectCAFrom = "cert-manager.io/inject-ca-from"

// How long cert-manager's serving certificates are valid and how long
// before expiry it renews them: as Annex's own (ServingValidity,
// ServingRenewBefore).
var (
	certManagerDuration    = fmt.Sprintf("%dh", int(ServingValidity.Hours()))
	certManagerRenewBefore = fmt.Sprintf("%dh", int(ServingRenewBefore.Hours()))
)

// certManagerCertificates returns what has cert-manager issue the serving
// certificates: with no issuer named, the installation's self-signed
// Issuer, its CA Certificate and CA Issuer; then a Certificate per
// Service of a Deployment serving webhooks or aggregated APIs, whose
// Secret <service>-cert (kubernetes.io/tls, with ca.crt) the Deployment
// mounts as it mounts Annex's own.
func (c *converter) certManagerCertificates() []*unstructured.Unstructured {
	ns, issuer := c.o.InstallNamespace, *c.o.CertManager
	var out []*unstructured.Unstructured
	if issuer.Name == "" {
		selfSigned := object("cert-manager.io/v1", "Issuer", ns, c.o.Name+"-selfsigned", nil)
		selfSigned.Object["spec"] = map[string]any{"selfSigned": map[string]any{}}
		caName := WebhookCASecretName(c.o.Name)
		ca := object("cert-manager.io/v1", "Certificate", ns, caName, nil)
		ca.Object["spec"] = map[string]any{
			"isCA":       true,
			"commonName": fmt.Sprintf("annex webhook CA of %s/%s", ns, c.o.Name),
			"secretName": caName,
			"duration":   fmt.Sprintf("%dh", int(CAValidity.Hours())),
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
			"issuerRef":  map[string]any{"name": selfSigned.GetName(), "kind": "Issuer", "group": "cert-manager.io"},
		}
		caIssuer := object("cert-manager.io/v1", "Issuer", ns, caName, nil)
		caIssuer.Object["spec"] = map[string]any{"ca": map[string]any{"secretName": caName}}
		out = append(out, selfSigned, ca, caIssuer)
		issuer = CertManagerIssuer{Name: caName, Kind: "Issuer"}
	}
	if issuer.Kind == "" {
		issuer.Kind = "Issuer"
	}
	for _, d := range c.webhookDeployments() {
		svc := WebhookServiceName(d)
		cert := object("cert-manager.io/v1", "Certificate", ns, WebhookCertSecretName(svc), nil)
		cert.Object["spec"] = map[string]any{
			"secretName":  WebhookCertSecretName(svc),
			"dnsNames":    []any{svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"},
			"duration":    certManagerDuration,
			"renewBefore": certManagerRenewBefore,
			"privateKey":  map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
			"usages":      []any{"server auth", "digital signature", "key encipherment"},
			"issuerRef":   map[string]any{"name": issuer.Name, "kind": issuer.Kind, "group": "cert-manager.io"},
		}
		out = append(out, cert)
	}
	return out
}

// injectCA has cert-manager's CA injector fill obj's caBundle from the
// Certificate of deployment's Service; nothing when Annex issues the
// certificates (it writes the caBundle itself).
func (c *converter) injectCA(obj *unstructured.Unstructured, deployment string) {
	if c.o.CertManager == nil {
		return
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationInjectCAFrom] = c.o.InstallNamespace + "/" + WebhookCertSecretName(WebhookServiceName(deployment))
	obj.SetAnnotations(annotations)
}
