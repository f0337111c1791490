package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/exampleoperator"
	"github.com/annex-platform/annex/internal/testenv"
)

// TestExampleOperator tells the built-in example operator's story on
// `annex dev`, as the README's walkthrough does: config/samples installs
// it from channel stable (0.1.0, SingleNamespace) out of the built-in
// catalog's File-Based Catalog; annex dev runs its Pod as
// bin/example-operator with the Pod's ServiceAccount, so the operator has
// only the RBAC Annex derived from the bundle; a Banner becomes Ready once
// its ConfigMap exists, and a Banner whose ConfigMap name is taken says
// Conflict; spec.version 0.2.0 upgrades along the channel's edge and the
// running operator is then 0.2.0 (the ConfigMap records the version);
// deleting the Banners and then the installation removes the operator, and
// its process stops.
func TestExampleOperator(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	_, out, exited, stateDir := startDev(t, 90*time.Second)
	c := clientFromKubeconfig(t, filepath.Join(stateDir, "kubeconfig"))
	ctx := context.Background()
	wait := func(what string, f func() error) {
		t.Helper()
		waitFor(t, 90*time.Second, exited, func() error {
			if err := f(); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		})
	}

	// Install from channel stable.
	for _, obj := range readManifests(t, filepath.Join(root, "config/samples/example-operator.yaml")) {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	inst := &v1alpha1.ExtensionInstallation{}
	key := client.ObjectKey{Namespace: "default", Name: "example-operator"}
	installed := func(version string) func() error {
		return func() error {
			if err := c.Get(ctx, key, inst); err != nil {
				return err
			}
			if inst.Status.InstalledVersion != version || !meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionReady) {
				return fmt.Errorf("installed %q, conditions %+v", inst.Status.InstalledVersion, inst.Status.Conditions)
			}
			return nil
		}
	}
	wait("example-operator 0.1.0 Ready", installed("0.1.0"))
	if cond := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionResolved); cond == nil || !strings.Contains(cond.Message, "channel stable") {
		t.Errorf("Resolved does not name channel stable: %+v", cond)
	}
	wait("the operator process", func() error {
		if !strings.Contains(out.String(), "images: running "+exampleoperator.Image+":0.1.0 for Pod example-operator/") ||
			!strings.Contains(out.String(), "as ServiceAccount example-operator/example-operator") {
			return errors.New("annex dev has not said it runs example-operator 0.1.0 as its ServiceAccount")
		}
		return nil
	})

	// A Banner is Ready once its ConfigMap exists; one whose ConfigMap
	// name is taken says Conflict.
	hello := newBanner("hello", "Hello from the e2e test")
	if err := c.Create(ctx, hello); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "taken-banner"}}); err != nil {
		t.Fatal(err)
	}
	taken := newBanner("taken", "Hi")
	if err := c.Create(ctx, taken); err != nil {
		t.Fatal(err)
	}
	wait("Banner hello Ready", bannerReady(c, hello, exampleoperator.ReasonCreated))
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hello-banner"}, cm); err != nil || cm.Data["message"] != hello.Spec.Message {
		t.Fatalf("ConfigMap hello-banner: %v %v", cm.Data, err)
	}
	wait("Banner taken in Conflict", bannerReady(c, taken, exampleoperator.ReasonConflict))

	// Upgrade along the channel's edge.
	upgrade := client.MergeFrom(inst.DeepCopy())
	inst.Spec.Version = "0.2.0"
	if err := c.Patch(ctx, inst, upgrade); err != nil { // the status may have moved since inst was read
		t.Fatal(err)
	}
	wait("example-operator 0.2.0 Ready", installed("0.2.0"))
	wait("the 0.2.0 behaviour", func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hello-banner"}, cm); err != nil {
			return err
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(hello), hello); err != nil {
			return err
		}
		if cm.Data["version"] != "0.2.0" || hello.Status.ConfigMapName != "hello-banner" {
			return fmt.Errorf("ConfigMap data %v, status.configMapName %q", cm.Data, hello.Status.ConfigMapName)
		}
		return nil
	})
	if !strings.Contains(out.String(), "images: stopped "+exampleoperator.Image+":0.1.0") {
		t.Errorf("annex dev did not say it stopped the 0.1.0 process")
	}

	// The RBAC Annex derived from the bundle was enough: the operator
	// was never refused.
	logs, err := filepath.Glob(filepath.Join(stateDir, "logs", "pods", "example-operator_*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no logs of the operator's processes in %s (%v)", filepath.Join(stateDir, "logs", "pods"), err)
	}
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "forbidden") {
			t.Errorf("the operator was refused something; %s:\n%s", path, data)
		}
	}

	// Uninstall: the Banners first (the operator removes their
	// finalizers), then the operator.
	for _, b := range []*exampleoperator.Banner{hello, taken} {
		if err := c.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	wait("the Banners gone", func() error {
		list := &exampleoperator.BannerList{}
		if err := c.List(ctx, list, client.InNamespace("default")); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d Banners left", len(list.Items))
		}
		return nil
	})
	if err := c.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	wait("the installation gone", func() error {
		if err := c.Get(ctx, key, inst); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (err=%v)", err)
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "example-operator", Name: "example-operator"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Deployment still there (err=%v)", err)
		}
		if !strings.Contains(out.String(), "images: stopped "+exampleoperator.Image+":0.2.0") {
			return errors.New("annex dev has not said it stopped the 0.2.0 process")
		}
		return nil
	})
}

func newBanner(name, message string) *exampleoperator.Banner {
	return &exampleoperator.Banner{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       exampleoperator.BannerSpec{Message: message},
	}
}

// bannerReady passes when b's Ready condition has reason (True for
// Created, False otherwise) for its generation; b is refreshed.
func bannerReady(c client.Client, b *exampleoperator.Banner, reason string) func() error {
	return func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(b.Status.Conditions, exampleoperator.ConditionReady)
		if cond == nil || cond.Reason != reason || cond.ObservedGeneration != b.Generation {
			return fmt.Errorf("Ready %+v, want reason %s", cond, reason)
		}
		return nil
	}
}
