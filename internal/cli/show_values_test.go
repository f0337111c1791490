package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/manager"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// valuesChart has a values schema that gives some defaults and not
// others, and a values.yaml that sets keys the schema does not list,
// nested ones too.
var valuesChart = helmrepo.Chart{Name: "values-demo", Version: "1.0.0", AppVersion: "1.0.0",
	Description: "A chart whose values.yaml sets what its schema does not.",
	Files: map[string]string{
		"values.yaml": `# the greeting
message: hello
replicas: 2
image:
  repository: ghcr.io/example/demo
  tag: "1.0"
podAnnotations:
  prometheus.io/scrape: "true"
extraEnv: []
resources:
  limits:
    cpu: 100m
`,
		"values.schema.json": `{"type":"object","required":["message"],"properties":{
			"message":{"type":"string","description":"The greeting."},
			"replicas":{"type":"integer","default":1,"description":"Pods to run."},
			"image":{"type":"object","properties":{"repository":{"type":"string"},"tag":{"type":"string"}}}}}`,
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  message: {{ .Values.message | quote }}\n",
	}}

// plainChart has values.yaml only, as most public charts do.
var plainChart = helmrepo.Chart{Name: "plain-demo", Version: "0.3.0", AppVersion: "0.3.0",
	Description: "A chart without a values schema.",
	Files: map[string]string{
		"values.yaml":       "service:\n  type: ClusterIP\n  port: 80\nenabled: true\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
	}}

// annexctl show prints the defaults of the chart's values.yaml for every
// value, for a built-in chart, charts of a Helm repository served over
// HTTP and one of an OCI registry, which the manager reads when show asks: not at the catalog's
// sync, once per digest however often it is asked, and never an archive
// whose digest is not the one the catalog indexed.
func TestShowPrintsChartValues(t *testing.T) {
	env := testenv.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mgr, err := manager.New(env.Config, manager.Options{MetricsAddr: "0", CacheDir: t.TempDir(), SeveralPerProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	changed := helmrepo.Chart{Name: "changed-demo", Version: "1.0.0", Files: map[string]string{"values.yaml": "a: 1\n"}}
	repo := helmrepo.NewServer(t, valuesChart, plainChart, changed,
		helmrepo.Chart{Name: "viewer-demo", Version: "1.0.0", Files: map[string]string{"values.yaml": "a: 1\n"}},
		helmrepo.Chart{Name: "plain-demo-reader", Version: "1.0.0", Files: map[string]string{"values.yaml": "a: 1\n"}})
	addCatalog(t, env.Client, &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "builtin"},
		Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Builtin: &v1alpha1.BuiltinSource{}}}})
	addCatalog(t, env.Client, &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "repo"},
		Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}})
	// An OCI registry's chart is read the same way.
	registry := catalogtest.NewRegistry(t)
	helmrepo.PushOCI(t, registry, "charts", helmrepo.Chart{Name: "oci-demo", Version: "2.0.0", Description: "A chart in an OCI registry.",
		Files: map[string]string{"values.yaml": "replicas: 3\n", "values.schema.json": `{"properties":{"replicas":{"type":"integer","minimum":1}}}`}})
	addCatalog(t, env.Client, &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "oci"},
		Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OCI: &v1alpha1.OCISource{Repository: "oci://" + registry + "/charts"}}}})
	archive := "/" + valuesChart.Name + "-" + valuesChart.Version + ".tgz"
	if n := repo.Requests(archive); n != 0 {
		t.Fatalf("the catalog's sync downloaded %s %d times; the index is all it needs", archive, n)
	}

	show := func(t *testing.T, name string) *cli.ExtensionDetail {
		t.Helper()
		d, err := cli.Show(ctx, env.Client, name, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, c := range []struct{ extension, file string }{
		{"hello", "show-values-builtin.txt"},    // built-in: the schema in the Extension, values.yaml read on request
		{"values-demo", "show-values-helm.txt"}, // a Helm repository's chart with a schema
		{"plain-demo", "show-values-plain.txt"}, // one with values.yaml only
		{"oci-demo", "show-values-oci.txt"},     // a chart of an OCI registry
	} {
		t.Run(c.extension, func(t *testing.T) {
			var out bytes.Buffer
			if err := cli.WriteExtension(&out, cli.OutputTable, show(t, c.extension)); err != nil {
				t.Fatal(err)
			}
			golden(t, "cli/"+c.file, out.Bytes())
		})
	}

	t.Run("read once per digest", func(t *testing.T) {
		if n := repo.Requests(archive); n != 1 {
			t.Fatalf("%s was downloaded %d times for one show; want 1", archive, n)
		}
		show(t, "values-demo")
		// Asked again by someone else: the manager answers from the
		// entry it holds for this digest.
		ext := &v1alpha1.Extension{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "values-demo"}, ext); err != nil {
			t.Fatal(err)
		}
		before := ext.DeepCopy()
		metav1.SetMetaDataAnnotation(&ext.ObjectMeta, v1alpha1.AnnotationValuesRequested, "1.0.0")
		if err := env.Client.Patch(ctx, ext, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, func() error {
			if err := env.Client.Get(ctx, client.ObjectKey{Name: "values-demo"}, ext); err != nil {
				return err
			}
			if a, ok := ext.Annotations[v1alpha1.AnnotationValuesRequested]; ok {
				return fmt.Errorf("the request %q is not answered yet", a)
			}
			return nil
		})
		if n := repo.Requests(archive); n != 1 {
			t.Errorf("%s was downloaded %d times for three asks; want 1", archive, n)
		}
		if got, ok := catalog.CurrentValues(ext, "1.0.0"); !ok || got.Defaults == nil || got.Digest != ext.Spec.Versions[0].Source.Digest {
			t.Errorf("status.values of values-demo 1.0.0: %+v (current %v)", got, ok)
		}
	})

	t.Run("viewers ask, and change nothing else", func(t *testing.T) {
		viewer := userClient(t, env, "values-viewer", "annex-extension-viewer")
		d, err := cli.Show(ctx, viewer, "viewer-demo", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if v := d.Versions[0]; v.Values == nil || len(v.Values.Properties) != 1 || v.Values.Properties[0].Default != "1" || v.ValuesNote != "" {
			t.Errorf("the viewer's show of viewer-demo: values %+v, note %q; want a: 1", v.Values, v.ValuesNote)
		}
		// What an Extension installs is not the viewer's to change (the
		// policy annex-values-request takes effect a moment after it is
		// written).
		testenv.Eventually(t, time.Minute, func() error {
			ext := &v1alpha1.Extension{}
			if err := viewer.Get(ctx, client.ObjectKey{Name: "viewer-demo"}, ext); err != nil {
				return err
			}
			before := ext.DeepCopy()
			ext.Spec.Versions[0].Source.URL = "http://127.0.0.1:1/elsewhere.tgz"
			err := viewer.Patch(ctx, ext, client.MergeFrom(before))
			if err == nil || !strings.Contains(err.Error(), "may change only the annotation annex.dev/values-requested") {
				return fmt.Errorf("the viewer's change of spec.versions[0].source.url: %v", err)
			}
			return nil
		})
		// Who may only read is told why the values are missing.
		reader := userClient(t, env, "values-reader", readerRole(t, env))
		d, err = cli.Show(ctx, reader, "plain-demo-reader", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if note := d.Versions[0].ValuesNote; !strings.Contains(note, "needs permission to patch extensions.annex.dev") {
			t.Errorf("the reader's note: %q", note)
		}
	})

	t.Run("an archive that is not the one indexed is not read", func(t *testing.T) {
		changed.Files = map[string]string{"values.yaml": "a: 2\n"}
		repo.ReplaceArchive(t, changed)
		d := show(t, "changed-demo")
		note := d.Versions[0].ValuesNote
		if d.Versions[0].Values != nil || !strings.Contains(note, "the archive changed after it was indexed") {
			t.Errorf("values %+v, note %q; want none, and the digest mismatch named", d.Versions[0].Values, note)
		}
	})
}

// addCatalog creates a Catalog and waits until it has synced.
func addCatalog(t *testing.T, c client.Client, cat *v1alpha1.Catalog) {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, cat); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() error {
		got := &v1alpha1.Catalog{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cat), got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("catalog %s not ready: %+v", cat.Name, got.Status.Conditions)
		}
		return nil
	})
}

// userClient is a client that impersonates user, bound cluster-wide to
// the ClusterRole role (created from config/rbac/approval_roles.yaml
// when it is one of Annex's).
func userClient(t *testing.T, env *testenv.Env, user, role string) client.Client {
	t.Helper()
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "approval_roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		cr := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict([]byte(doc), cr); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, cr); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// readerRole creates a ClusterRole that may read Extensions only, and
// returns its name.
func readerRole(t *testing.T, env *testenv.Env) string {
	t.Helper()
	cr := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "extension-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"extensions"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if err := env.Client.Create(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	return cr.Name
}
