package bundle

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Webhook types of spec.webhookdefinitions[].type.
const (
	ValidatingAdmissionWebhook = "ValidatingAdmissionWebhook"
	MutatingAdmissionWebhook   = "MutatingAdmissionWebhook"
	ConversionWebhook          = "ConversionWebhook"
)

// Steps of the install plan a bundle with webhooks adds.
const (
	// StepCertificates applies the webhook CA and serving certificate
	// Secrets and the webhook Services, first of all (see Convert).
	StepCertificates = "webhook-certificates"
	// StepWebhooks applies the Validating- and
	// MutatingWebhookConfigurations once the Deployments are Available,
	// so that no request is sent to a webhook that is not serving.
	StepWebhooks = "webhooks"
)

// Where OLM mounts the serving certificate into a webhook's Deployment;
// operators built with controller-runtime (the first) or an aggregated
// API server library (the second) read it there.
const (
	WebhookCertDir    = "/tmp/k8s-webhook-server/serving-certs"
	APIServiceCertDir = "/apiserver.local.config/certificates"
)

// AnnotationCertificateNotAfter, on the certificate Secrets, is when the
// certificate expires (RFC 3339); the bundle engine's inputs digest it, so
// that a renewed certificate is a new revision.
const AnnotationCertificateNotAfter = "annex.dev/certificate-not-after"

// CertificateInputs are what the bundle engine needs to issue webhook
// certificates: the time and the certificate Secrets that exist.
type CertificateInputs struct {
	Now time.Time
	// Secret returns the data of the install namespace's Secret named
	// name; nil when there is none.
	Secret func(name string) map[string][]byte
}

// WebhookDefinition is one spec.webhookdefinitions entry.
type WebhookDefinition struct {
	GenerateName            string                                          `json:"generateName"`
	Type                    string                                          `json:"type"`
	DeploymentName          string                                          `json:"deploymentName"`
	ContainerPort           int32                                           `json:"containerPort,omitempty"`
	TargetPort              *intstr.IntOrString                             `json:"targetPort,omitempty"`
	Rules                   []admissionregistrationv1.RuleWithOperations    `json:"rules,omitempty"`
	FailurePolicy           *admissionregistrationv1.FailurePolicyType      `json:"failurePolicy,omitempty"`
	MatchPolicy             *admissionregistrationv1.MatchPolicyType        `json:"matchPolicy,omitempty"`
	ObjectSelector          *metav1.LabelSelector                           `json:"objectSelector,omitempty"`
	SideEffects             *admissionregistrationv1.SideEffectClass        `json:"sideEffects,omitempty"`
	TimeoutSeconds          *int32                                          `json:"timeoutSeconds,omitempty"`
	AdmissionReviewVersions []string                                        `json:"admissionReviewVersions,omitempty"`
	ReinvocationPolicy      *admissionregistrationv1.ReinvocationPolicyType `json:"reinvocationPolicy,omitempty"`
	WebhookPath             *string                                         `json:"webhookPath,omitempty"`
	ConversionCRDs          []string                                        `json:"conversionCRDs,omitempty"`
}

func (w WebhookDefinition) port() int32 {
	if w.ContainerPort == 0 {
		return 443
	}
	return w.ContainerPort
}

// name is generateName without a trailing dash: the webhook's name and
// its configuration's.
func (w WebhookDefinition) name() string { return strings.TrimSuffix(w.GenerateName, "-") }

func (w WebhookDefinition) path() string {
	if w.WebhookPath == nil || *w.WebhookPath == "" {
		return "/"
	}
	return *w.WebhookPath
}

// WebhookServiceName is the Service of a webhook Deployment, as OLM names
// it: the Deployment's name, dots made dashes, and "-service".
func WebhookServiceName(deployment string) string {
	return strings.ReplaceAll(deployment, ".", "-") + "-service"
}

// WebhookCASecretName is the Secret holding an installation's webhook CA.
func WebhookCASecretName(installation string) string { return installation + "-webhook-ca" }

// WebhookCertSecretName is the Secret holding a webhook Service's serving
// certificate.
func WebhookCertSecretName(service string) string { return service + "-cert" }

// checkWebhooks refuses webhook definitions Annex cannot install, naming
// spec.webhookdefinitions[i] and the field.
func (c *converter) checkWebhooks() error {
	refuse := func(i int, field, format string, args ...any) error {
		return &UnsupportedError{CSV: c.b.CSV.Metadata.Name, Field: fmt.Sprintf("spec.webhookdefinitions[%d].%s", i, field), Message: fmt.Sprintf(format, args...)}
	}
	deployments := map[string]bool{}
	for _, d := range c.b.CSV.Spec.Install.Spec.Deployments {
		deployments[d.Name] = true
	}
	crds := map[string]bool{}
	for _, crd := range c.b.CRDs {
		crds[crd.GetName()] = true
	}
	names := map[string]int{}
	converted := map[string]int{}
	for i, w := range c.b.CSV.Spec.WebhookDefinitions {
		if !slices.Contains([]string{ValidatingAdmissionWebhook, MutatingAdmissionWebhook, ConversionWebhook}, w.Type) {
			return refuse(i, "type", "%q is not a webhook type; use ValidatingAdmissionWebhook, MutatingAdmissionWebhook or ConversionWebhook", w.Type)
		}
		if !deployments[w.DeploymentName] {
			return refuse(i, "deploymentName", "%q is not a deployment of spec.install.spec.deployments; name the Deployment that serves the webhook", w.DeploymentName)
		}
		if errs := validation.IsDNS1123Subdomain(w.name()); len(errs) > 0 {
			return refuse(i, "generateName", "%q is not a DNS subdomain (%s)", w.GenerateName, strings.Join(errs, "; "))
		}
		key := w.Type + "/" + w.name()
		if j, dup := names[key]; dup {
			return refuse(i, "generateName", "%q is spec.webhookdefinitions[%d] already; webhook names are unique per type", w.GenerateName, j)
		}
		names[key] = i
		if w.Type != ConversionWebhook {
			for _, r := range w.Rules {
				for _, g := range r.APIGroups {
					if g == "*" || g == "olm.operatorframework.io" || g == "annex.dev" {
						return refuse(i, "rules", "API group %q may not be intercepted by an operator's webhook (it would guard the objects Annex and the cluster need); name the operator's own API groups", g)
					}
				}
			}
			continue
		}
		if len(w.ConversionCRDs) == 0 {
			return refuse(i, "conversionCRDs", "is empty; a ConversionWebhook names the CRDs it converts")
		}
		if !c.allNamespaces() {
			return refuse(i, "type", "a ConversionWebhook serves every namespace (a CRD is cluster-wide), so the operator must watch all namespaces; leave spec.watchNamespaces empty")
		}
		for _, name := range w.ConversionCRDs {
			if !crds[name] {
				return refuse(i, "conversionCRDs", "CRD %q is not in the bundle; a conversion webhook converts only the operator's own CRDs", name)
			}
			if j, dup := converted[name]; dup {
				return refuse(i, "conversionCRDs", "CRD %q is converted by spec.webhookdefinitions[%d] already; keep one", name, j)
			}
			converted[name] = i
		}
	}
	for _, crd := range c.b.CRDs {
		if _, ok := converted[crd.GetName()]; !ok {
			continue
		}
		if keep, _, _ := unstructured.NestedBool(crd.Object, "spec", "preserveUnknownFields"); keep {
			return &UnsupportedError{CSV: c.b.CSV.Metadata.Name, Field: "manifests", Message: fmt.Sprintf(
				"CRD %q sets spec.preserveUnknownFields, which a conversion webhook does not allow; remove it from the CRD", crd.GetName())}
		}
	}
	return nil
}

// webhookDeployments returns the Deployments that serve webhooks or
// aggregated APIs (owned APIServices), in the order of
// spec.install.spec.deployments: each gets a Service and a serving
// certificate.
func (c *converter) webhookDeployments() []string {
	var out []string
	for _, d := range c.b.CSV.Spec.Install.Spec.Deployments {
		if c.servesAPI(d.Name) || slices.ContainsFunc(c.b.CSV.Spec.WebhookDefinitions, func(w WebhookDefinition) bool { return w.DeploymentName == d.Name }) {
			out = append(out, d.Name)
		}
	}
	return out
}

// webhookCerts issues (or keeps) the installation's CA and one serving
// certificate per webhook Service, and returns their Secrets and the CA
// bundle (the CA, and the CA it replaced while that is valid). The CA
// Secret keeps the CA's key, and previous-ca.crt while there is one; a
// serving Secret is kubernetes.io/tls with ca.crt beside tls.crt and
// tls.key.
func (c *converter) webhookCerts() ([]*unstructured.Unstructured, []byte, error) {
	in := c.o.Certificates
	if in == nil {
		return nil, nil, fmt.Errorf("bundle %s: webhooks need certificates, and the conversion was given no CertificateInputs", c.b.CSV.Metadata.Name)
	}
	pair := func(data map[string][]byte, cert, key string) *KeyPair {
		if data == nil {
			return nil
		}
		return &KeyPair{Cert: data[cert], Key: data[key]}
	}
	ns := c.o.InstallNamespace
	caName := WebhookCASecretName(c.o.Name)
	caData := in.Secret(caName)
	ca, previous := pair(caData, "ca.crt", "ca.key"), caData["previous-ca.crt"]
	var secrets []*unstructured.Unstructured
	var last Certificates
	for _, d := range c.webhookDeployments() {
		svc := WebhookServiceName(d)
		certName := WebhookCertSecretName(svc)
		issued, err := IssueCertificates(CertificateRequest{
			Now:        in.Now,
			CAName:     fmt.Sprintf("annex webhook CA of %s/%s", ns, c.o.Name),
			DNSNames:   []string{svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"},
			CA:         ca,
			Serving:    pair(in.Secret(certName), "tls.crt", "tls.key"),
			PreviousCA: previous,
		})
		if err != nil {
			return nil, nil, err
		}
		// The next Service's certificate is signed by the same CA.
		ca, previous, last = &issued.CA, issued.PreviousCA, issued
		secret := secretObject(ns, certName, "kubernetes.io/tls", issued.ServingNotAfter, map[string][]byte{
			"tls.crt": issued.Serving.Cert, "tls.key": issued.Serving.Key, "ca.crt": issued.CA.Cert,
		})
		secrets = append(secrets, secret)
	}
	data := map[string][]byte{"ca.crt": last.CA.Cert, "ca.key": last.CA.Key}
	if len(last.PreviousCA) > 0 {
		data["previous-ca.crt"] = last.PreviousCA
	}
	caSecret := secretObject(ns, caName, "Opaque", last.CANotAfter, data)
	return append([]*unstructured.Unstructured{caSecret}, secrets...), last.Bundle(), nil
}

func secretObject(ns, name, typ string, notAfter time.Time, data map[string][]byte) *unstructured.Unstructured {
	obj := object("v1", "Secret", ns, name, nil)
	obj.SetAnnotations(map[string]string{AnnotationCertificateNotAfter: notAfter.UTC().Format(time.RFC3339)})
	obj.Object["type"] = typ
	encoded := map[string]any{}
	for k, v := range data {
		encoded[k] = base64.StdEncoding.EncodeToString(v)
	}
	obj.Object["data"] = encoded
	return obj
}

// webhookServices returns one Service per webhook Deployment selecting its
// pods (spec.selector.matchLabels), with a port per distinct
// containerPort named after it, to targetPort (containerPort when unset),
// and port 443 to the containerPort of an aggregated API it serves.
func (c *converter) webhookServices() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, d := range c.webhookDeployments() {
		var spec DeploymentSpec
		for _, s := range c.b.CSV.Spec.Install.Spec.Deployments {
			if s.Name == d {
				spec = s
			}
		}
		selector, _, _ := unstructured.NestedStringMap(spec.Spec, "selector", "matchLabels")
		if len(selector) == 0 {
			return nil, &UnsupportedError{CSV: c.b.CSV.Metadata.Name, Field: "spec.install.spec.deployments[" + d + "].spec.selector.matchLabels",
				Message: "is empty; the webhook Service selects the Deployment's pods by these labels"}
		}
		var ports []any
		seen := map[int32]bool{}
		for _, w := range c.b.CSV.Spec.WebhookDefinitions {
			if w.DeploymentName != d || seen[w.port()] {
				continue
			}
			seen[w.port()] = true
			target := intstr.FromInt32(w.port())
			if w.TargetPort != nil {
				target = *w.TargetPort
			}
			ports = append(ports, map[string]any{"name": strconv.Itoa(int(w.port())), "port": int64(w.port()), "protocol": "TCP", "targetPort": toData(target)})
		}
		// An aggregated API is served at port 443 of the Service, as the
		// APIService says.
		for _, a := range c.b.CSV.Spec.APIServiceDefinitions.Owned {
			if a.DeploymentName != d || seen[443] {
				continue
			}
			seen[443] = true
			ports = append(ports, map[string]any{"name": "443", "port": int64(443), "protocol": "TCP", "targetPort": int64(a.port())})
		}
		svc := object("v1", "Service", c.o.InstallNamespace, WebhookServiceName(d), nil)
		sel := map[string]any{}
		for k, v := range selector {
			sel[k] = v
		}
		svc.Object["spec"] = map[string]any{"type": "ClusterIP", "selector": sel, "ports": ports}
		out = append(out, svc)
	}
	return out, nil
}

// clientConfig is the webhook's service reference with the CA bundle
// (none under cert-manager, whose CA injector writes it).
func (c *converter) clientConfig(w WebhookDefinition, caBundle []byte) map[string]any {
	cc := map[string]any{
		"service": map[string]any{
			"namespace": c.o.InstallNamespace,
			"name":      WebhookServiceName(w.DeploymentName),
			"path":      w.path(),
			"port":      int64(w.port()),
		},
	}
	if caBundle != nil {
		cc["caBundle"] = base64.StdEncoding.EncodeToString(caBundle)
	}
	return cc
}

// webhookConfigurations returns a Validating- or
// MutatingWebhookConfiguration per admission webhook, named as OLM names
// it (generateName without a trailing dash), limited to the watched
// namespaces unless the operator watches all.
func (c *converter) webhookConfigurations(caBundle []byte) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, w := range c.b.CSV.Spec.WebhookDefinitions {
		kind := map[string]string{ValidatingAdmissionWebhook: "ValidatingWebhookConfiguration", MutatingAdmissionWebhook: "MutatingWebhookConfiguration"}[w.Type]
		if kind == "" {
			continue
		}
		hook := map[string]any{
			"name":                    w.name(),
			"clientConfig":            c.clientConfig(w, caBundle),
			"admissionReviewVersions": toData(orDefault(w.AdmissionReviewVersions, []string{"v1"})),
			"sideEffects":             string(ptrOr(w.SideEffects, admissionregistrationv1.SideEffectClassNone)),
			"failurePolicy":           string(ptrOr(w.FailurePolicy, admissionregistrationv1.Fail)),
			"matchPolicy":             string(ptrOr(w.MatchPolicy, admissionregistrationv1.Equivalent)),
			"timeoutSeconds":          int64(ptrOr(w.TimeoutSeconds, 10)),
		}
		if len(w.Rules) > 0 {
			hook["rules"] = toData(w.Rules)
		}
		if w.ObjectSelector != nil {
			hook["objectSelector"] = toData(w.ObjectSelector)
		}
		if !c.allNamespaces() {
			hook["namespaceSelector"] = map[string]any{"matchExpressions": []any{map[string]any{
				"key": "kubernetes.io/metadata.name", "operator": "In", "values": toData(c.targets),
			}}}
		}
		if w.Type == MutatingAdmissionWebhook && w.ReinvocationPolicy != nil {
			hook["reinvocationPolicy"] = string(*w.ReinvocationPolicy)
		}
		obj := object("admissionregistration.k8s.io/v1", kind, "", w.name(), nil)
		obj.Object["webhooks"] = []any{hook}
		c.injectCA(obj, w.DeploymentName)
		out = append(out, obj)
	}
	return out
}

// convertCRDs sets spec.conversion of the CRDs a ConversionWebhook names:
// strategy Webhook, to the webhook's Service, with the CA bundle.
func (c *converter) convertCRDs(crds []*unstructured.Unstructured, caBundle []byte) {
	for _, w := range c.b.CSV.Spec.WebhookDefinitions {
		if w.Type != ConversionWebhook {
			continue
		}
		for _, crd := range crds {
			if !slices.Contains(w.ConversionCRDs, crd.GetName()) {
				continue
			}
			crd.Object["spec"].(map[string]any)["conversion"] = map[string]any{
				"strategy": "Webhook",
				"webhook": map[string]any{
					"clientConfig":             c.clientConfig(w, caBundle),
					"conversionReviewVersions": toData(orDefault(w.AdmissionReviewVersions, []string{"v1"})),
				},
			}
			c.injectCA(crd, w.DeploymentName)
		}
	}
}

// mountCertificates mounts the serving certificate of a webhook
// Deployment's Service into each of its containers where OLM does.
func mountCertificates(spec map[string]any, secret string) {
	volumes, _, _ := unstructured.NestedSlice(spec, "template", "spec", "volumes")
	volumes = append(volumes,
		map[string]any{"name": "webhook-cert", "secret": map[string]any{"secretName": secret, "items": []any{
			map[string]any{"key": "tls.crt", "path": "tls.crt"}, map[string]any{"key": "tls.key", "path": "tls.key"}}}},
		map[string]any{"name": "apiservice-cert", "secret": map[string]any{"secretName": secret, "items": []any{
			map[string]any{"key": "tls.crt", "path": "apiserver.crt"}, map[string]any{"key": "tls.key", "path": "apiserver.key"}}}},
	)
	_ = unstructured.SetNestedSlice(spec, volumes, "template", "spec", "volumes")
	containers, _, _ := unstructured.NestedSlice(spec, "template", "spec", "containers")
	for _, ct := range containers {
		m, ok := ct.(map[string]any)
		if !ok {
			continue
		}
		mounts, _, _ := unstructured.NestedSlice(m, "volumeMounts")
		mounts = append(mounts,
			map[string]any{"name": "webhook-cert", "mountPath": WebhookCertDir},
			map[string]any{"name": "apiservice-cert", "mountPath": APIServiceCertDir})
		m["volumeMounts"] = mounts
	}
	_ = unstructured.SetNestedSlice(spec, containers, "template", "spec", "containers")
}

func orDefault(v, def []string) []string {
	if len(v) == 0 {
		return def
	}
	return v
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
