package bundle

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/internal/plan"
)

// A bundle whose manager serves an aggregated API becomes what OLM makes
// of it: a Service port 443 to the container port, the serving
// certificate mounted, the auth-delegator and authentication-reader
// bindings for its service account, and the APIService with the CA
// bundle in the last step, after the Deployment.
func TestConvertOwnedAPIService(t *testing.T) {
	b := loadFixture(t, "memcached-operator")
	manager := "memcached-operator-controller-manager"
	b.CSV.Spec.APIServiceDefinitions.Owned = []APIServiceDescription{{
		Name: "v1alpha1.metrics.example.com", Group: "metrics.example.com", Version: "v1alpha1", Kind: "Metric",
		DeploymentName: manager, ContainerPort: 6443,
	}}
	// Required APIServices are dependencies the resolver meets, not the
	// engine's business.
	b.CSV.Spec.APIServiceDefinitions.Required = []APIServiceDescription{{Name: "v1beta1.metrics.k8s.io", Group: "metrics.k8s.io", Version: "v1beta1", Kind: "PodMetrics"}}
	none := func(string) map[string][]byte { return nil }
	o := Options{InstallNamespace: "operators", Name: "memcached", Certificates: &CertificateInputs{Now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC), Secret: none}}
	p, err := Convert(b, o)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	stepOf := map[string]string{}
	for _, s := range p.Phases[0].Steps {
		steps = append(steps, s.Name)
		for _, obj := range s.Tasks[0].Objects {
			stepOf[obj.GetKind()+"/"+obj.GetName()] = s.Name
		}
	}
	if got, want := strings.Join(steps, ","), "webhook-certificates,crds,rbac,manifests,deployments,webhooks"; got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
	if got := stepOf["APIService/v1alpha1.metrics.example.com"]; got != StepWebhooks {
		t.Errorf("the APIService is in step %q, want %q (after the Deployment is Available)", got, StepWebhooks)
	}

	svcName := manager + "-service"
	svc := findObject(p, "Service", svcName)
	if svc == nil {
		t.Fatalf("no Service %s", svcName)
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(ports) != 1 || ports[0].(map[string]any)["port"] != int64(443) || ports[0].(map[string]any)["targetPort"] != int64(6443) {
		t.Errorf("Service ports %v, want 443 to 6443", ports)
	}

	ca := secretsOf(p)("memcached-webhook-ca")["ca.crt"]
	apiService := findObject(p, "APIService", "v1alpha1.metrics.example.com")
	spec, _, _ := unstructured.NestedMap(apiService.Object, "spec")
	service, _ := spec["service"].(map[string]any)
	if spec["group"] != "metrics.example.com" || spec["version"] != "v1alpha1" || spec["caBundle"] != base64.StdEncoding.EncodeToString(ca) ||
		service["name"] != svcName || service["namespace"] != "operators" || service["port"] != int64(443) ||
		spec["groupPriorityMinimum"] != int64(2000) || spec["versionPriority"] != int64(15) {
		t.Errorf("APIService spec %v", spec)
	}
	if len(secretsOf(p)(svcName + "-cert")["tls.crt"]) == 0 {
		t.Errorf("no serving certificate Secret %s-cert", svcName)
	}

	dep := findObject(p, "Deployment", manager)
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	var mounts []string
	for _, m := range containers[0].(map[string]any)["volumeMounts"].([]any) {
		mounts = append(mounts, m.(map[string]any)["mountPath"].(string))
	}
	if !strings.Contains(strings.Join(mounts, ","), APIServiceCertDir) {
		t.Errorf("the manager mounts %v, want the serving certificate at %s", mounts, APIServiceCertDir)
	}

	sa, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "serviceAccountName")
	var delegator, reader bool
	for _, obj := range p.Objects(plan.TaskApply) {
		roleRef, _, _ := unstructured.NestedStringMap(obj.Object, "roleRef")
		subjects, _, _ := unstructured.NestedSlice(obj.Object, "subjects")
		if len(subjects) != 1 || subjects[0].(map[string]any)["name"] != sa || subjects[0].(map[string]any)["namespace"] != "operators" {
			continue
		}
		switch {
		case obj.GetKind() == "ClusterRoleBinding" && roleRef["kind"] == "ClusterRole" && roleRef["name"] == "system:auth-delegator":
			delegator = stepOf["ClusterRoleBinding/"+obj.GetName()] == StepRBAC
		case obj.GetKind() == "RoleBinding" && obj.GetNamespace() == "kube-system" && roleRef["kind"] == "Role" && roleRef["name"] == "extension-apiserver-authentication-reader":
			reader = stepOf["RoleBinding/"+obj.GetName()] == StepRBAC
		}
	}
	if !delegator || !reader {
		t.Errorf("service account %s bound to system:auth-delegator: %v, to extension-apiserver-authentication-reader in kube-system: %v (want both, in step rbac)", sa, delegator, reader)
	}
}
