package bundle

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/annex-platform/annex/internal/plan"
)

// Options are the parameters of a conversion.
type Options struct {
	// InstallNamespace is where the operator's Deployments, ServiceAccounts
	// and namespaced manifests go.
	InstallNamespace string
	// WatchNamespaces are the namespaces the operator watches
	// (spec.watchNamespaces). Empty means all namespaces.
	WatchNamespaces []string
	// Name is the installation's name; generated RBAC names derive from it.
	Name string
	// Resources are the custom resources to create once the operator is
	// up (spec.resources).
	Resources []Resource
	// Certificates issue the webhooks' certificates; required when the
	// CSV declares webhooks or owned APIServices, unless CertManager is
	// set.
	Certificates *CertificateInputs
	// CertManager, when set, has cert-manager issue those certificates
	// and inject the CA bundle (see certmanager.go) in place of Annex's
	// own CA (spec.webhookCertificates.provider CertManager).
	CertManager *CertManagerIssuer
}

// UnsupportedError reports a bundle, or a choice of watched namespaces,
// that the engine refuses to install. Field names the CSV field (or
// spec.watchNamespaces) at fault; Message says why and what to do. It is
// permanent: the same bundle and options fail again.
type UnsupportedError struct {
	// CSV is the ClusterServiceVersion's metadata.name.
	CSV     string
	Field   string
	Message string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("bundle %s: %s: %s", e.CSV, e.Field, e.Message)
}

// Permanent marks the error as final.
func (e *UnsupportedError) Permanent() bool { return true }

// Step names of the install plan, in order.
const (
	PlanInstall   = "install"
	StepCRDs      = "crds"
	StepRBAC      = "rbac"
	StepManifests = "manifests"
	StepOperator  = "deployments"
)

// Pod-template annotations the operator reads through the downward API.
const (
	AnnotationTargetNamespaces  = "olm.targetNamespaces"
	AnnotationOperatorNamespace = "olm.operatorNamespace"
)

// InstallModeFor returns the install mode that watchNamespaces select for
// an install namespace: none → AllNamespaces, [install] → OwnNamespace,
// [other] → SingleNamespace, several → MultiNamespace.
func InstallModeFor(installNamespace string, watchNamespaces []string) InstallModeType {
	switch {
	case len(watchNamespaces) == 0:
		return AllNamespaces
	case len(watchNamespaces) > 1:
		return MultiNamespace
	case watchNamespaces[0] == installNamespace:
		return OwnNamespace
	default:
		return SingleNamespace
	}
}

// Convert turns b into the plan "install", one serial phase of serial
// steps, each one Apply task; empty steps are left out:
//
//  1. webhook-certificates (only with webhooks or owned APIServices): the
//     installation's CA Secret (<Name>-webhook-ca) and, per Deployment
//     serving a webhook or an aggregated API, a
//     kubernetes.io/tls Secret <service>-cert for <service>.<namespace>.svc,
//     issued by IssueCertificates from what Options.Certificates finds —
//     the same CA and certificate on every render until renewal is due —
//     and a Service <deployment>-service selecting its pods. They come
//     first, applied in the reconcile that rendered them, so that every
//     later render (and the CA bundle of every later step) reads the same
//     CA from the cluster.
//     Under Options.CertManager this step holds cert-manager's Issuers and
//     Certificates in place of the Secrets (certManagerCertificates), and
//     the CA bundles of the later steps are left to cert-manager's CA
//     injector (annotation cert-manager.io/inject-ca-from).
//  2. crds: the bundle's CRDs; those a ConversionWebhook names get
//     spec.conversion (strategy Webhook, its Service, the CA bundle).
//  3. rbac: a ServiceAccount in the install namespace per distinct
//     serviceAccountName of the CSV's permissions and clusterPermissions
//     ("default" excepted); each clusterPermissions entry as a ClusterRole
//     and ClusterRoleBinding; each permissions entry as a Role and
//     RoleBinding in every watched namespace and, unlike OLM v1, in the
//     install namespace too (operators keep leader-election leases and
//     events there) — or, for AllNamespaces, as a ClusterRole and
//     ClusterRoleBinding with read access to namespaces added, as OLM does;
//     for the service account of a Deployment serving an aggregated API,
//     the bindings an aggregated API server needs (apiServiceRBAC).
//  4. manifests: the bundle's other manifests, namespaced ones placed in
//     the install namespace. They come before the Deployments because
//     those mount the ConfigMaps and Secrets and would never become
//     available without them.
//  5. deployments: the CSV's Deployments in the install namespace, labelled
//     with their label, revisionHistoryLimit 1 unless set, and on the pod
//     template the CSV's annotations (but alm-examples and olm.examples,
//     which are for UIs and can be large) under the template's own, plus
//     olm.targetNamespaces (watched namespaces comma-joined, "" for all)
//     and olm.operatorNamespace; a Deployment serving a webhook or an
//     aggregated API mounts its serving certificate at WebhookCertDir and
//     APIServiceCertDir, as OLM does.
//  6. webhooks: the Validating- and MutatingWebhookConfigurations and the
//     APIServices of spec.apiservicedefinitions.owned (see apiservices.go),
//     with the CA bundle, once the step before made the Deployments
//     Available: a webhook or an aggregated API is never registered
//     before it serves.
//  7. resources: the custom resources of Options.Resources (see
//     resources), once the step before made the operator Available.
//
// Generated RBAC names are <Name>-<serviceAccount> cut to fit 63
// characters with an 8-character hash of the installation, scope, service
// account and entry index: stable across bundle versions while those stay
// the same, so an upgrade updates roles in place.
//
// Convert refuses, with *UnsupportedError, what Annex does not install:
// watched namespaces the CSV's installModes do not support, webhook
// definitions and owned APIServices it cannot serve (see checkWebhooks,
// checkAPIServices), owned CRDs missing from the bundle, and Deployments with
// no, invalid or duplicate names. Bad Options are *UnsupportedError on the
// options' field (spec.watchNamespaces, spec.resources[i]...). Required
// CRDs and APIServices are not refused: the resolver has the extension
// that owns them installed first (olm.gvk.required).
func Convert(b *Bundle, o Options) (plan.Plan, error) {
	targets, err := checkOptions(b, o)
	if err != nil {
		return plan.Plan{}, err
	}
	if err := checkSupported(b); err != nil {
		return plan.Plan{}, err
	}
	c := converter{b: b, o: o, targets: targets}
	if err := c.checkWebhooks(); err != nil {
		return plan.Plan{}, err
	}
	if err := c.checkAPIServices(); err != nil {
		return plan.Plan{}, err
	}
	resources, err := c.resources()
	if err != nil {
		return plan.Plan{}, err
	}
	crds := clone(b.CRDs)
	var certificates, webhooks []*unstructured.Unstructured
	rbac := c.rbac()
	if len(b.CSV.Spec.WebhookDefinitions) > 0 || len(b.CSV.Spec.APIServiceDefinitions.Owned) > 0 {
		var secrets []*unstructured.Unstructured
		var caBundle []byte // nil under cert-manager: its CA injector writes it
		if c.o.CertManager != nil {
			secrets = c.certManagerCertificates()
		} else if secrets, caBundle, err = c.webhookCerts(); err != nil {
			return plan.Plan{}, err
		}
		services, err := c.webhookServices()
		if err != nil {
			return plan.Plan{}, err
		}
		c.convertCRDs(crds, caBundle)
		certificates = append(secrets, services...)
		webhooks = append(c.webhookConfigurations(caBundle), c.apiServices(caBundle)...)
		rbac = append(rbac, c.apiServiceRBAC()...)
	}
	steps := []plan.Step{
		step(StepCertificates, certificates),
		step(StepCRDs, crds),
		step(StepRBAC, rbac),
		step(StepManifests, c.manifests()),
		step(StepOperator, c.deployments()),
		step(StepWebhooks, webhooks),
		step(StepResources, resources),
	}
	steps = slices.DeleteFunc(steps, func(s plan.Step) bool { return len(s.Tasks[0].Objects) == 0 })
	return plan.Plan{
		Name:     PlanInstall,
		Strategy: plan.Serial,
		Phases:   []plan.Phase{{Name: PlanInstall, Strategy: plan.Serial, Steps: steps}},
	}, nil
}

func step(name string, objs []*unstructured.Unstructured) plan.Step {
	return plan.Step{Name: name, Tasks: []plan.Task{{Name: name, Kind: plan.TaskApply, Objects: objs}}}
}

// checkOptions validates o against b's install modes and returns the
// target namespaces ("" alone for all namespaces), sorted and unique.
func checkOptions(b *Bundle, o Options) ([]string, error) {
	refuse := func(field, format string, args ...any) error {
		return &UnsupportedError{CSV: b.CSV.Metadata.Name, Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if errs := validation.IsDNS1123Label(o.InstallNamespace); len(errs) > 0 {
		return nil, refuse("spec.namespace", "install namespace %q is not a namespace name (%s)", o.InstallNamespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
		return nil, refuse("metadata.name", "installation name %q is not a DNS subdomain (%s)", o.Name, strings.Join(errs, "; "))
	}
	targets := slices.Clone(o.WatchNamespaces)
	slices.Sort(targets)
	targets = slices.Compact(targets)
	for _, ns := range targets {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, refuse("spec.watchNamespaces", "%q is not a namespace name (%s); leave spec.watchNamespaces empty to watch all namespaces", ns, strings.Join(errs, "; "))
		}
	}
	mode := InstallModeFor(o.InstallNamespace, targets)
	var supported []string
	ok := false
	for _, m := range b.CSV.Spec.InstallModes {
		if m.Supported {
			supported = append(supported, string(m.Type))
			ok = ok || m.Type == mode
		}
	}
	if !ok {
		return nil, refuse("spec.watchNamespaces", "%v selects install mode %s, which the CSV's spec.installModes do not support (supported: %s); %s",
			o.WatchNamespaces, mode, orNone(supported), modeHint(supported, o.InstallNamespace))
	}
	if len(targets) == 0 {
		targets = []string{""}
	}
	return targets, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// modeHint says how to set spec.watchNamespaces for a supported mode.
func modeHint(supported []string, installNs string) string {
	switch {
	case slices.Contains(supported, string(AllNamespaces)):
		return "leave spec.watchNamespaces empty to watch all namespaces"
	case slices.Contains(supported, string(OwnNamespace)):
		return fmt.Sprintf("set spec.watchNamespaces to [%s] to watch the install namespace", installNs)
	case slices.Contains(supported, string(SingleNamespace)):
		return "set spec.watchNamespaces to one namespace other than the install namespace"
	case slices.Contains(supported, string(MultiNamespace)):
		return "set spec.watchNamespaces to several namespaces"
	}
	return "the operator supports no install mode; pick another version"
}

// checkSupported refuses the features the engine does not install.
func checkSupported(b *Bundle) error {
	s := b.CSV.Spec
	refuse := func(field, format string, args ...any) error {
		return &UnsupportedError{CSV: b.CSV.Metadata.Name, Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if len(s.Install.Spec.Deployments) == 0 {
		return refuse("spec.install.spec.deployments", "is empty; an operator bundle runs at least one Deployment")
	}
	seen := map[string]bool{}
	for i, d := range s.Install.Spec.Deployments {
		field := fmt.Sprintf("spec.install.spec.deployments[%d].name", i)
		if d.Name == "" {
			return refuse(field, "is empty; every deployment needs a name")
		}
		if errs := validation.IsDNS1123Subdomain(d.Name); len(errs) > 0 {
			return refuse(field, "%q is not a DNS subdomain (%s); rename the deployment", d.Name, strings.Join(errs, "; "))
		}
		if seen[d.Name] {
			return refuse(field, "%q appears twice; deployment names are unique", d.Name)
		}
		seen[d.Name] = true
	}
	crds := map[string]bool{}
	for _, c := range b.CRDs {
		if crds[c.GetName()] {
			return refuse("manifests", "CustomResourceDefinition %q appears twice; keep one", c.GetName())
		}
		crds[c.GetName()] = true
	}
	for i, o := range s.CustomResourceDefinitions.Owned {
		if !crds[o.Name] {
			return refuse(fmt.Sprintf("spec.customresourcedefinitions.owned[%d].name", i), "CRD %q is owned by the CSV but not in the bundle's manifests; add its manifest or fix the name (<plural>.<group>)", o.Name)
		}
	}
	return nil
}

type converter struct {
	b       *Bundle
	o       Options
	targets []string
}

func (c *converter) allNamespaces() bool { return len(c.targets) == 1 && c.targets[0] == "" }

// rbac returns ServiceAccounts, then cluster RBAC, then namespaced RBAC.
func (c *converter) rbac() []*unstructured.Unstructured {
	spec := c.b.CSV.Spec.Install.Spec
	var sas []string
	for _, p := range slices.Concat(spec.Permissions, spec.ClusterPermissions) {
		if sa := saName(p); sa != "default" && !slices.Contains(sas, sa) {
			sas = append(sas, sa)
		}
	}
	var out []*unstructured.Unstructured
	for _, sa := range sas {
		out = append(out, object("v1", "ServiceAccount", c.o.InstallNamespace, sa, nil))
	}
	for i, p := range spec.ClusterPermissions {
		name := c.rbacName("cluster", saName(p), i)
		out = append(out, c.role("ClusterRole", "", name, p.Rules), c.binding("ClusterRoleBinding", "", name, saName(p)))
	}
	if c.allNamespaces() {
		for i, p := range spec.Permissions {
			rules := append(slices.Clone(p.Rules), rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"namespaces"}})
			name := c.rbacName("all-namespaces", saName(p), i)
			out = append(out, c.role("ClusterRole", "", name, rules), c.binding("ClusterRoleBinding", "", name, saName(p)))
		}
		return out
	}
	namespaces := c.targets
	if !slices.Contains(namespaces, c.o.InstallNamespace) {
		namespaces = append(slices.Clone(namespaces), c.o.InstallNamespace)
		slices.Sort(namespaces)
	}
	for _, ns := range namespaces {
		for i, p := range spec.Permissions {
			name := c.rbacName("namespace", saName(p), i)
			out = append(out, c.role("Role", ns, name, p.Rules), c.binding("RoleBinding", ns, name, saName(p)))
		}
	}
	return out
}

func saName(p Permission) string {
	if p.ServiceAccountName == "" {
		return "default"
	}
	return p.ServiceAccountName
}

// rbacName is <Name>-<sa> and a hash of what makes the object unique,
// cut to 63 characters.
func (c *converter) rbacName(scope, sa string, index int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%s\x00%d", c.o.InstallNamespace, c.o.Name, scope, sa, index))
	suffix := new(big.Int).SetBytes(sum[:]).Text(36)[:8]
	base := c.o.Name + "-" + sa
	if limit := validation.DNS1123LabelMaxLength - len(suffix) - 1; len(base) > limit {
		base = strings.TrimRight(base[:limit], "-.")
	}
	return base + "-" + suffix
}

func (c *converter) role(kind, ns, name string, rules []rbacv1.PolicyRule) *unstructured.Unstructured {
	obj := object("rbac.authorization.k8s.io/v1", kind, ns, name, nil)
	obj.Object["rules"] = toData(rules)
	return obj
}

func (c *converter) binding(kind, ns, name, sa string) *unstructured.Unstructured {
	roleKind := "Role"
	if kind == "ClusterRoleBinding" {
		roleKind = "ClusterRole"
	}
	obj := object("rbac.authorization.k8s.io/v1", kind, ns, name, nil)
	obj.Object["roleRef"] = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": roleKind, "name": name}
	obj.Object["subjects"] = []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": c.o.InstallNamespace}}
	return obj
}

// manifests places the namespaced Others in the install namespace.
func (c *converter) manifests() []*unstructured.Unstructured {
	out := clone(c.b.Others)
	for _, obj := range out {
		if allowedKinds[obj.GetKind()] {
			obj.SetNamespace(c.o.InstallNamespace)
		}
	}
	return out
}

func (c *converter) deployments() []*unstructured.Unstructured {
	podAnnotations := map[string]string{}
	for k, v := range c.b.CSV.Metadata.Annotations {
		if k != "alm-examples" && k != "olm.examples" {
			podAnnotations[k] = v
		}
	}
	var out []*unstructured.Unstructured
	for _, d := range c.b.CSV.Spec.Install.Spec.Deployments {
		obj := object("apps/v1", "Deployment", c.o.InstallNamespace, d.Name, d.Label)
		spec, _ := toData(d.Spec).(map[string]any)
		if spec == nil {
			spec = map[string]any{}
		}
		if _, set := spec["revisionHistoryLimit"]; !set {
			spec["revisionHistoryLimit"] = int64(1)
		}
		annotations := maps.Clone(podAnnotations)
		own, _, _ := unstructured.NestedStringMap(spec, "template", "metadata", "annotations")
		maps.Copy(annotations, own)
		annotations[AnnotationTargetNamespaces] = strings.Join(c.targets, ",")
		annotations[AnnotationOperatorNamespace] = c.o.InstallNamespace
		_ = unstructured.SetNestedStringMap(spec, annotations, "template", "metadata", "annotations")
		if slices.Contains(c.webhookDeployments(), d.Name) {
			mountCertificates(spec, WebhookCertSecretName(WebhookServiceName(d.Name)))
		}
		obj.Object["spec"] = spec
		out = append(out, obj)
	}
	return out
}

func object(apiVersion, kind, ns, name string, labels map[string]string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetName(name)
	if ns != "" {
		obj.SetNamespace(ns)
	}
	if len(labels) > 0 {
		obj.SetLabels(labels)
	}
	return obj
}

// toData turns a typed value into JSON data (maps, slices, strings,
// float64 and int64 numbers) as unstructured objects hold it.
func toData(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("bundle: marshal %T: %v", v, err)) // only our own JSON-safe types reach here
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(err)
	}
	return fixNumbers(out)
}

// fixNumbers turns whole float64s into int64, as unstructured expects.
func fixNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = fixNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = fixNumbers(e)
		}
	case float64:
		if t == float64(int64(t)) {
			return int64(t)
		}
	}
	return v
}

func clone(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}
