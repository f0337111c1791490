package charts_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/charts"
	"github.com/annex-platform/annex/internal/catalog/builtin"
	"github.com/annex-platform/annex/internal/engine/helm"
	"github.com/annex-platform/annex/internal/testenv"
)

// chartMeta reads charts/annex/Chart.yaml.
func chartMeta(t *testing.T) (version, appVersion string) {
	t.Helper()
	raw, err := fs.ReadFile(charts.Annex(), "Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	return meta.Version, meta.AppVersion
}

// TestChartVersion: the chart is Annex's own release, so its version and
// appVersion (the image tag it deploys by default) are one semantic
// version.
func TestChartVersion(t *testing.T) {
	version, appVersion := chartMeta(t)
	if _, err := semver.StrictNewVersion(version); err != nil {
		t.Errorf("charts/annex/Chart.yaml version %q is not a semantic version: %v", version, err)
	}
	if version != appVersion {
		t.Errorf("charts/annex/Chart.yaml: version %q, appVersion %q; both are Annex's release version, set them alike", version, appVersion)
	}
}

// TestChartCopiesInSync: the chart carries copies of what config/ holds
// (the CRDs, the manager's generated ClusterRole, the admission policies);
// `make generate` writes them. A copy that differs fails here.
func TestChartCopiesInSync(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pairs := map[string]string{ // chart folder or file → config folder or file
		"crds":                                     "config/crd/bases",
		"files/manager-role.yaml":                  "config/rbac/role.yaml",
		"files/admission/approver.yaml":            "config/admission/approver.yaml",
		"files/admission/requested-by.yaml":        "config/admission/requested-by.yaml",
		"files/admission/values-request.yaml":      "config/admission/values-request.yaml",
		"files/admission/uninstall-finalizer.yaml": "config/admission/uninstall-finalizer.yaml",
	}
	for inChart, inConfig := range pairs {
		chartFiles, configFiles := yamlFiles(t, filepath.Join(root, "charts/annex", inChart)), yamlFiles(t, filepath.Join(root, inConfig))
		if filepath.Ext(inChart) == ".yaml" { // one file: compare under one name
			chartFiles = map[string][]byte{"": chartFiles[filepath.Base(inChart)]}
			configFiles = map[string][]byte{"": configFiles[filepath.Base(inConfig)]}
		}
		for name, data := range configFiles {
			if !bytes.Equal(chartFiles[name], data) {
				t.Errorf("charts/annex/%s/%s differs from %s/%s or is missing: run make generate", inChart, name, inConfig, name)
			}
		}
		for name := range chartFiles {
			if _, ok := configFiles[name]; !ok {
				t.Errorf("charts/annex/%s/%s has no source in %s: run make generate", inChart, name, inConfig)
			}
		}
	}
	// Every admission policy of config/admission is in the chart.
	configAdmission, _ := filepath.Glob(filepath.Join(root, "config/admission/*.yaml"))
	for _, p := range configAdmission {
		if base := filepath.Base(p); base != "kustomization.yaml" && pairs["files/admission/"+base] == "" {
			t.Errorf("config/admission/%s is not copied into charts/annex/files/admission", base)
		}
	}
}

// yamlFiles reads path (a file, or the .yaml files of a folder) by base name.
func yamlFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	names := []string{path}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		names, _ = filepath.Glob(filepath.Join(path, "*.yaml"))
	}
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		if err == nil {
			files[filepath.Base(n)] = data
		}
	}
	return files
}

// TestChartLint runs Helm's own linter (what `helm lint` runs) with the
// defaults and with the options: no warning, no error.
func TestChartLint(t *testing.T) {
	for _, values := range []map[string]any{nil, leastPrivilege, withServiceMonitor} {
		result := lint.RunAll("annex", values, "annex-system")
		for _, m := range result.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("helm lint with %v: %v", values, m)
			}
		}
	}
}

var (
	leastPrivilege = map[string]any{"rbac": map[string]any{
		"leastPrivilege": true, "tenantNamespaces": []any{"team-a", "team-b"},
	}}
	withServiceMonitor = map[string]any{"metrics": map[string]any{
		"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
	}}
)

// renderChart renders the chart as the built-in catalog serves it, with
// Annex's own renderer, as release "annex" in annex-system.
func renderChart(t *testing.T, values map[string]any) (*helm.Result, error) {
	t.Helper()
	version, _ := chartMeta(t)
	archive, err := builtin.Archive("annex", version)
	if err != nil {
		t.Fatal(err)
	}
	return helm.Render(helm.Input{
		Archive: archive, Name: "annex", Namespace: "annex-system", Values: values,
		KubeVersion: "v1.37.1", ExtensionRef: "annex " + version,
	})
}

// byKindName indexes objects as "Kind/namespace/name".
func byKindName(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
	}
	return m
}

func keysOf(m map[string]*unstructured.Unstructured) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// managerArgs returns the manager container's args of the Deployment.
func managerArgs(t *testing.T, objs map[string]*unstructured.Unstructured) []string {
	t.Helper()
	d, ok := objs["Deployment/annex-system/annex"]
	if !ok {
		t.Fatalf("no Deployment annex-system/annex among %v", keysOf(objs))
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(containers))
	}
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

// TestChartRenders checks what each option renders, then has a real API
// server validate every object (server-side dry-run, strict field
// validation: an unknown or misplaced field fails).
func TestChartRenders(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	c := env.Client
	for _, ns := range []string{"annex-system", "team-a", "team-b"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	// The Prometheus Operator's ServiceMonitor, reduced to the fields the
	// chart writes, so that the API server checks them.
	if err := c.Create(ctx, serviceMonitorCRD()); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() error {
		return c.List(ctx, &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitorList"}})
	})
	managerRole := generatedRole(t)

	tests := []struct {
		name   string
		values map[string]any
		check  func(t *testing.T, objs map[string]*unstructured.Unstructured, args []string)
	}{
		{"defaults", nil, func(t *testing.T, objs map[string]*unstructured.Unstructured, args []string) {
			for _, want := range []string{
				"ServiceAccount/annex-system/annex", "ClusterRole//annex-manager", "ClusterRoleBinding//annex-manager",
				"Role/annex-system/annex-leader-election", "RoleBinding/annex-system/annex-leader-election",
				"ClusterRoleBinding//annex-extension-applier", "ClusterRole//annex-extension-requester", "ClusterRole//annex-approver", "ClusterRole//annex-extension-viewer",
				"ClusterRole//annex-rollout-approver", "Service/annex-system/annex-metrics", "MutatingAdmissionPolicy//annex-requested-by", "ValidatingAdmissionPolicy//annex-approver", "ValidatingAdmissionPolicy//annex-values-request",
			} {
				if objs[want] == nil {
					t.Errorf("no %s among %v", want, keysOf(objs))
				}
			}
			if objs["ServiceMonitor/annex-system/annex"] != nil {
				t.Error("a ServiceMonitor without metrics.serviceMonitor.enabled")
			}
			if ref, _, _ := unstructured.NestedString(objs["ClusterRoleBinding//annex-extension-applier"].Object, "roleRef", "name"); ref != "cluster-admin" {
				t.Errorf("the applier binding binds %q, want cluster-admin", ref)
			}
			for _, want := range []string{"manager", "--leader-elect=true", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081", "--log-development=false"} {
				if !slices.Contains(args, want) {
					t.Errorf("manager args %q lack %s", args, want)
				}
			}
			if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--default-service-account") }) {
				t.Errorf("manager args %q: multi-tenant mode without rbac.leastPrivilege", args)
			}
			version, _ := chartMeta(t)
			d := objs["Deployment/annex-system/annex"]
			containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			if image := containers[0].(map[string]any)["image"]; image != "annex:"+version {
				t.Errorf("image %v, want annex:%s (the chart's appVersion)", image, version)
			}
			ports, _, _ := unstructured.NestedSlice(objs["Service/annex-system/annex-metrics"].Object, "spec", "ports")
			if len(ports) != 1 || fmt.Sprint(ports[0].(map[string]any)["port"]) != "8080" {
				t.Errorf("metrics Service ports %v, want 8080", ports)
			}
			// The roles for people are those of config/rbac/approval_roles.yaml.
			for _, role := range approvalRoles(t) {
				got, _, _ := unstructured.NestedSlice(objs["ClusterRole//"+role.Name].Object, "rules")
				gotYAML, _ := yaml.Marshal(got)
				wantYAML, _ := yaml.Marshal(role.Rules)
				if !bytes.Equal(gotYAML, wantYAML) {
					t.Errorf("ClusterRole %s rules differ from config/rbac/approval_roles.yaml:\n%s\nwant\n%s", role.Name, gotYAML, wantYAML)
				}
			}
			// The ClusterRole is the generated one.
			rules, _, _ := unstructured.NestedSlice(objs["ClusterRole//annex-manager"].Object, "rules")
			got, _ := yaml.Marshal(rules)
			want, _ := yaml.Marshal(managerRole.Rules)
			if !bytes.Equal(got, want) {
				t.Errorf("ClusterRole annex-manager rules differ from config/rbac/role.yaml:\n%s\nwant\n%s", got, want)
			}
		}},
		{"least privilege", leastPrivilege, func(t *testing.T, objs map[string]*unstructured.Unstructured, args []string) {
			if objs["ClusterRoleBinding//annex-extension-applier"] != nil {
				t.Error("least privilege still binds cluster-admin")
			}
			for _, ns := range []string{"team-a", "team-b"} {
				if objs["ServiceAccount/"+ns+"/annex-installer"] == nil || objs["RoleBinding/"+ns+"/annex-installer"] == nil {
					t.Errorf("no installer ServiceAccount and RoleBinding in %s among %v", ns, keysOf(objs))
				}
			}
			for _, want := range []string{"--default-service-account=annex-installer", "--restrict-targets"} {
				if !slices.Contains(args, want) {
					t.Errorf("manager args %q lack %s", args, want)
				}
			}
			for k, o := range objs {
				if o.GetKind() == "ClusterRoleBinding" {
					if ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name"); ref == "cluster-admin" {
						t.Errorf("%s binds cluster-admin", k)
					}
				}
			}
		}},
		{"service monitor", withServiceMonitor, func(t *testing.T, objs map[string]*unstructured.Unstructured, args []string) {
			sm := objs["ServiceMonitor/annex-system/annex"]
			if sm == nil {
				t.Fatalf("no ServiceMonitor among %v", keysOf(objs))
			}
			if sm.GetLabels()["release"] != "prometheus" {
				t.Errorf("ServiceMonitor labels %v lack release=prometheus", sm.GetLabels())
			}
			sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
			svc := objs["Service/annex-system/annex-metrics"]
			for k, v := range sel {
				if svc.GetLabels()[k] != v {
					t.Errorf("the ServiceMonitor selects %s=%s, which the metrics Service lacks (%v)", k, v, svc.GetLabels())
				}
			}
		}},
		// A release per shard: the manager serves shard a only; the
		// policies, with their fixed names, stay with the first release.
		{"shard", map[string]any{"manager": map[string]any{"shard": "a"}, "admission": map[string]any{"enabled": false}}, func(t *testing.T, objs map[string]*unstructured.Unstructured, args []string) {
			if !slices.Contains(args, "--shard=a") {
				t.Errorf("manager args %q lack --shard=a", args)
			}
			if objs["ValidatingAdmissionPolicy//annex-approver"] != nil {
				t.Error("admission policies with admission.enabled false")
			}
		}},
		{"metrics off", map[string]any{"metrics": map[string]any{"enabled": false}}, func(t *testing.T, objs map[string]*unstructured.Unstructured, args []string) {
			if objs["Service/annex-system/annex-metrics"] != nil || !slices.Contains(args, "--metrics-bind-address=0") {
				t.Errorf("metrics off: Service %v, args %q", objs["Service/annex-system/annex-metrics"] != nil, args)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := renderChart(t, tt.values)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.CRDs) != len(yamlFiles(t, "annex/crds")) || len(res.CRDs) == 0 {
				t.Errorf("%d CRDs rendered, want the %d of crds/", len(res.CRDs), len(yamlFiles(t, "annex/crds")))
			}
			objs := byKindName(res.Objects)
			tt.check(t, objs, managerArgs(t, objs))
			// The validation below can fail: a misplaced field is refused.
			broken := objs["Deployment/annex-system/annex"].DeepCopy()
			_ = unstructured.SetNestedField(broken.Object, int64(1), "spec", "template", "spec", "replicas")
			if err := c.Patch(ctx, broken, client.Apply, client.DryRunAll, client.FieldValidation("Strict"), client.ForceOwnership, client.FieldOwner("chart-test")); err == nil {
				t.Error("the API server accepts a Deployment with spec.template.spec.replicas; the check below would not catch a broken template")
			}
			for _, o := range res.Objects {
				o := o.DeepCopy()
				if o.GetNamespace() == "" && isNamespaced(t, env, o) {
					o.SetNamespace("annex-system")
				}
				// Server-side apply: some objects (the admission policies)
				// exist already, installed by testenv as Annex installs them.
				if err := c.Patch(ctx, o, client.Apply, client.DryRunAll, client.FieldValidation("Strict"), client.ForceOwnership, client.FieldOwner("chart-test")); err != nil {
					t.Errorf("the API server refuses %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
				}
			}
		})
	}
}

// isNamespaced asks the API server's REST mapping.
func isNamespaced(t *testing.T, env *testenv.Env, o *unstructured.Unstructured) bool {
	t.Helper()
	namespaced, err := env.Client.IsObjectNamespaced(o)
	if err != nil {
		t.Fatalf("%s: %v", o.GetKind(), err)
	}
	return namespaced
}

// approvalRoles reads the ClusterRoles for people of
// config/rbac/approval_roles.yaml.
func approvalRoles(t *testing.T) []rbacv1.ClusterRole {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "approval_roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []rbacv1.ClusterRole
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		var role rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		out = append(out, role)
	}
	if len(out) == 0 {
		t.Fatal("config/rbac/approval_roles.yaml has no ClusterRoles")
	}
	return out
}

// generatedRole reads config/rbac/role.yaml.
func generatedRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	raw, err := fs.ReadFile(charts.Annex(), "files/manager-role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(raw, role); err != nil || len(role.Rules) == 0 {
		t.Fatalf("files/manager-role.yaml: %d rules, %v", len(role.Rules), err)
	}
	return role
}

// TestChartValuesSchema: values.schema.json refuses what would render a
// broken install, naming the field.
func TestChartValuesSchema(t *testing.T) {
	tests := []struct {
		values    map[string]any
		wantField string
	}{
		// A negative replica count.
		{map[string]any{"replicas": -1}, "replicas"},
		// A typo in a key is refused, not silently ignored.
		{map[string]any{"replica": 2}, "replica"},
		// A boolean given as a string.
		{map[string]any{"rbac": map[string]any{"leastPrivilege": "yes"}}, "rbac.leastPrivilege"},
		// A port out of range.
		{map[string]any{"metrics": map[string]any{"port": 70000}}, "metrics.port"},
		// An unknown log format.
		{map[string]any{"manager": map[string]any{"logFormat": "xml"}}, "manager.logFormat"},
		// A digest that is not one.
		{map[string]any{"image": map[string]any{"digest": "latest"}}, "image.digest"},
		// A shard name that is not a DNS label.
		{map[string]any{"manager": map[string]any{"shard": "Shard_A"}}, "manager.shard"},
		// An extra argument that is not a flag.
		{map[string]any{"manager": map[string]any{"extraArgs": []any{"restrict-targets"}}}, "manager.extraArgs"},
	}
	for _, tt := range tests {
		_, err := renderChart(t, tt.values)
		var verr *helm.ValuesError
		if !errors.As(err, &verr) || !strings.Contains(err.Error(), tt.wantField) {
			t.Errorf("values %v: error %v, want a values error naming %s", tt.values, err, tt.wantField)
		}
	}
}

// serviceMonitorCRD is monitoring.coreos.com/v1 ServiceMonitor with the
// fields the chart uses.
func serviceMonitorCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	obj := func(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
	}
	strMap := apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}}
	spec := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"selector":          obj(map[string]apiextensionsv1.JSONSchemaProps{"matchLabels": strMap}),
		"namespaceSelector": obj(map[string]apiextensionsv1.JSONSchemaProps{"matchNames": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}}}),
		"endpoints": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: ptrTo(obj(map[string]apiextensionsv1.JSONSchemaProps{
			"port": str, "path": str, "interval": str, "scrapeTimeout": str,
		}))}},
	})
	spec.Required = []string{"selector", "endpoints"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "servicemonitors", Singular: "servicemonitor", Kind: "ServiceMonitor", ListKind: "ServiceMonitorList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: ptrTo(obj(map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}))},
			}},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }
