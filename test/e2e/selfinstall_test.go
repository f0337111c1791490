package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/charts"
	"github.com/annex-platform/annex/config/crd"
)

// TestSelfInstall installs Annex's own chart with Annex: `annex dev`'s
// built-in catalog offers the native extension "annex" at the version of
// charts/annex (Annex's release), and an ExtensionInstallation of it puts
// the manager's Deployment (leader election on), its RBAC and its metrics
// Service into annex-system. The CRDs, which `annex dev` installed before,
// are applied again from the chart's crds/ (identical content) and become
// part of the installation's inventory; they stay Established.
//
// kwok's fake nodes run no containers, so no second manager starts (the
// image is not built here): the Pods are Running and Ready as kwok reports
// them, the Deployment Available, the installation Ready.
func TestSelfInstall(t *testing.T) {
	_, _, exited, stateDir := startDev(t, 90*time.Second)
	c := clientFromKubeconfig(t, filepath.Join(stateDir, "kubeconfig"))
	ctx := context.Background()

	raw, err := fs.ReadFile(charts.Annex(), "Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var chart struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(raw, &chart); err != nil {
		t.Fatal(err)
	}

	// The built-in catalog offers Annex at its own version.
	waitFor(t, 60*time.Second, exited, func() error {
		ext := &v1alpha1.Extension{}
		if err := c.Get(ctx, client.ObjectKey{Name: "annex"}, ext); err != nil {
			return err
		}
		var versions []string
		for _, v := range ext.Spec.Versions {
			versions = append(versions, v.Version)
		}
		if !slices.Equal(versions, []string{chart.Version}) {
			return fmt.Errorf("extension annex offers %v, want exactly %s", versions, chart.Version)
		}
		return nil
	})

	values, _ := json.Marshal(map[string]any{"replicas": 2})
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "annex"},
		Spec: v1alpha1.ExtensionInstallationSpec{
			Extension: "annex", Version: chart.Version, TargetNamespace: "annex-system",
			Values: &apiextensionsv1.JSON{Raw: values},
		},
	}
	if err := c.Create(ctx, inst); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 120*time.Second, exited, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(inst), inst); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("annex not Ready: %+v", inst.Status.Conditions)
		}
		return nil
	})
	if inst.Status.InstalledVersion != chart.Version {
		t.Errorf("installed version %q, want %s", inst.Status.InstalledVersion, chart.Version)
	}

	// The manager's Deployment: Annex's image at the chart's appVersion,
	// leader election on (two replicas here), both replicas available.
	deploy := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "annex-system", Name: "annex"}, deploy); err != nil {
		t.Fatal(err)
	}
	container := deploy.Spec.Template.Spec.Containers[0]
	if container.Image != "annex:"+chart.AppVersion || !slices.Contains(container.Args, "--leader-elect=true") {
		t.Errorf("manager container image %q args %q, want annex:%s with --leader-elect=true", container.Image, container.Args, chart.AppVersion)
	}
	// The annex binary knows every argument the chart passes: cobra
	// refuses an unknown flag before it prints the help.
	annex := filepath.Join(filepath.Dir(stateDir), "annex")
	if out, err := exec.Command(annex, append(slices.Clone(container.Args), "--help")...).CombinedOutput(); err != nil {
		t.Errorf("annex %q: %v\n%s", container.Args, err, out)
	}
	if deploy.Status.AvailableReplicas != 2 {
		t.Errorf("the manager Deployment has %d available replicas, want 2", deploy.Status.AvailableReplicas)
	}

	// RBAC, the ServiceAccount and the metrics Service.
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "annex-system", Name: "annex"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "annex-manager"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "annex-manager"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "annex-system", Name: "annex-leader-election"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "annex-system", Name: "annex-metrics"}},
	} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Errorf("%T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
		}
	}
	binding := &rbacv1.ClusterRoleBinding{}
	if err := c.Get(ctx, client.ObjectKey{Name: "annex-manager"}, binding); err == nil {
		if len(binding.Subjects) != 1 || binding.Subjects[0].Name != "annex" || binding.Subjects[0].Namespace != "annex-system" {
			t.Errorf("ClusterRoleBinding annex-manager binds %+v, want ServiceAccount annex-system/annex", binding.Subjects)
		}
	}

	// Every Annex CRD is in the installation's inventory and still
	// Established: the chart's copy replaced nothing.
	crds, err := crd.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range crds {
		inInventory := slices.ContainsFunc(inst.Status.Inventory, func(r v1alpha1.ObjectReference) bool {
			return r.Kind == "CustomResourceDefinition" && r.Name == want.Name
		})
		if !inInventory {
			t.Errorf("CRD %s is not in the installation's inventory", want.Name)
		}
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: want.Name}, got); err != nil {
			t.Fatal(err)
		}
		established := slices.ContainsFunc(got.Status.Conditions, func(cond apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue
		})
		if !established {
			t.Errorf("CRD %s is not Established after the self-install", want.Name)
		}
	}
}
