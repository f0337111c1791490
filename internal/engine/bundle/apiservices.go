package bundle

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// An operator that serves an aggregated API (spec.apiservicedefinitions.owned)
// gets what OLM gives it: its Deployment's Service (port 443 to the
// description's containerPort, the one Service webhooks use too), the
// serving certificate of that Service mounted at APIServiceCertDir, the
// RBAC an aggregated API server needs to authenticate and authorise the
// requests the API server forwards (system:auth-delegator, and reading
// the extension-apiserver-authentication ConfigMap in kube-system), and
// the APIService object <version>.<group> with the installation's CA
// bundle. The APIService is applied in StepWebhooks, once the Deployment
// is Available, and deleted first: an APIService whose server does not
// answer makes discovery of its group fail for every client.

// OLM's defaults for the APIService's priorities.
const (
	apiServiceGroupPriorityMinimum = 2000
	apiServiceVersionPriority      = 15
)

// apiServiceName is the APIService's name, <version>.<group>.
func (d APIServiceDescription) apiServiceName() string { return d.Version + "." + d.Group }

// port is the container port the aggregated API server listens on: the
// description's containerPort, 443 when unset.
func (d APIServiceDescription) port() int32 {
	if d.ContainerPort == 0 {
		return 443
	}
	return d.ContainerPort
}

// checkAPIServices refuses owned APIService descriptions Annex cannot
// install, naming spec.apiservicedefinitions.owned[i] and the field.
func (c *converter) checkAPIServices() error {
	refuse := func(i int, field, format string, args ...any) error {
		return &UnsupportedError{CSV: c.b.CSV.Metadata.Name, Field: fmt.Sprintf("spec.apiservicedefinitions.owned[%d].%s", i, field), Message: fmt.Sprintf(format, args...)}
	}
	deployments := map[string]bool{}
	for _, d := range c.b.CSV.Spec.Install.Spec.Deployments {
		deployments[d.Name] = true
	}
	served := map[string]bool{} // group/version the bundle's CRDs serve
	for _, crd := range c.b.CRDs {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			if m, ok := v.(map[string]any); ok {
				name, _ := m["name"].(string)
				served[group+"/"+name] = true
			}
		}
	}
	seen := map[string]int{}
	for i, d := range c.b.CSV.Spec.APIServiceDefinitions.Owned {
		if errs := validation.IsDNS1123Subdomain(d.Group); d.Group == "" || len(errs) > 0 {
			return refuse(i, "group", "%q is not an API group (a DNS subdomain such as metrics.example.com)", d.Group)
		}
		if errs := validation.IsDNS1123Label(d.Version); d.Version == "" || len(errs) > 0 {
			return refuse(i, "version", "%q is not an API version (such as v1alpha1)", d.Version)
		}
		if d.Group == "annex.dev" || strings.HasSuffix(d.Group, ".annex.dev") || d.Group == "apiregistration.k8s.io" || d.Group == "apiextensions.k8s.io" {
			return refuse(i, "group", "%q may not be served by an operator (Annex and the cluster need it); serve the operator's own API group", d.Group)
		}
		if !deployments[d.DeploymentName] {
			return refuse(i, "deploymentName", "%q is not a deployment of spec.install.spec.deployments; name the Deployment that serves %s", d.DeploymentName, d.apiServiceName())
		}
		if served[d.Group+"/"+d.Version] {
			return refuse(i, "version", "%s/%s is also served by a CRD of the bundle; one API version has one server", d.Group, d.Version)
		}
		if j, dup := seen[d.apiServiceName()]; dup {
			return refuse(i, "version", "APIService %s is spec.apiservicedefinitions.owned[%d] already; keep one", d.apiServiceName(), j)
		}
		seen[d.apiServiceName()] = i
		if p := d.ContainerPort; p < 0 || p > 65535 {
			return refuse(i, "containerPort", "%d is not a port", p)
		}
	}
	return nil
}

// apiServices returns the APIService objects of the owned descriptions,
// served by their Deployments' Services with caBundle (nil under
// cert-manager, whose CA injector writes it).
func (c *converter) apiServices(caBundle []byte) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, d := range c.b.CSV.Spec.APIServiceDefinitions.Owned {
		obj := object("apiregistration.k8s.io/v1", "APIService", "", d.apiServiceName(), nil)
		obj.Object["spec"] = map[string]any{
			"group":   d.Group,
			"version": d.Version,
			"service": map[string]any{
				"namespace": c.o.InstallNamespace,
				"name":      WebhookServiceName(d.DeploymentName),
				"port":      int64(443),
			},
			"groupPriorityMinimum": int64(apiServiceGroupPriorityMinimum),
			"versionPriority":      int64(apiServiceVersionPriority),
		}
		if caBundle != nil {
			obj.Object["spec"].(map[string]any)["caBundle"] = base64.StdEncoding.EncodeToString(caBundle)
		}
		c.injectCA(obj, d.DeploymentName)
		out = append(out, obj)
	}
	return out
}

// apiServiceRBAC binds the service account of each Deployment serving an
// aggregated API to what an aggregated API server needs: the ClusterRole
// system:auth-delegator (to review the tokens and access of the requests
// forwarded to it) and, in kube-system, the Role
// extension-apiserver-authentication-reader (to read the client CA that
// authenticates the API server). Both roles are the cluster's own.
func (c *converter) apiServiceRBAC() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	var done []string
	for _, d := range c.b.CSV.Spec.Install.Spec.Deployments {
		if !c.servesAPI(d.Name) {
			continue
		}
		sa, _, _ := unstructured.NestedString(d.Spec, "template", "spec", "serviceAccountName")
		if sa == "" {
			sa = "default"
		}
		if slices.Contains(done, sa) {
			continue
		}
		done = append(done, sa)
		delegator := object("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", c.rbacName("auth-delegator", sa, 0), nil)
		delegator.Object["roleRef"] = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"}
		delegator.Object["subjects"] = []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": c.o.InstallNamespace}}
		reader := object("rbac.authorization.k8s.io/v1", "RoleBinding", "kube-system", c.rbacName("auth-reader", sa, 0), nil)
		reader.Object["roleRef"] = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "extension-apiserver-authentication-reader"}
		reader.Object["subjects"] = []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": c.o.InstallNamespace}}
		out = append(out, delegator, reader)
	}
	return out
}

// servesAPI reports whether Deployment name serves an owned APIService.
func (c *converter) servesAPI(name string) bool {
	return slices.ContainsFunc(c.b.CSV.Spec.APIServiceDefinitions.Owned, func(d APIServiceDescription) bool { return d.DeploymentName == name })
}
