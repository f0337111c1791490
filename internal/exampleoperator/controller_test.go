package exampleoperator_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/internal/exampleoperator"
	"github.com/annex-platform/annex/internal/testenv"
)

// bundleCRD is the Banner CRD of one bundle of the built-in catalog.
func bundleCRD(t *testing.T, version string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	path := filepath.Join("..", "catalog", "builtin", "operators", "bundles", "example-operator-"+version, "manifests", "example.annex.dev_banners.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return crd
}

// TestOperator runs the operator against a real API server with the CRDs
// of its bundles: version 0.1.0 watching one namespace publishes a Banner
// as a ConfigMap before it says Ready, leaves Banners of other namespaces
// alone, reports a ConfigMap in its way as Conflict (and proceeds once it
// is gone), follows a changed message; after an upgrade to 0.2.0 (its
// CRD, then the operator) the ConfigMap records the version and the status
// its name; deleting a Banner deletes its ConfigMap, but never one the
// Banner does not control.
func TestOperator(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, exampleoperator.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	applyCRD(t, c, bundleCRD(t, "0.1.0"))
	for _, ns := range []string{"ops", "team-a", "team-b"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	elsewhere := banner("team-b", "hello", "Not mine")
	create(t, c, elsewhere)
	stop := startOperator(t, env, exampleoperator.Options{
		Version: "0.1.0", WatchNamespaces: []string{"team-a"}, LeaderElection: true, LeaderElectionNamespace: "ops",
	})

	// Ready only once the ConfigMap holds the message.
	hello := banner("team-a", "hello", "Hello, world")
	create(t, c, hello)
	ready := waitReady(t, c, hello, metav1.ConditionTrue, exampleoperator.ReasonCreated)
	if want := "ConfigMap hello-banner holds the message"; ready.Message != want {
		t.Errorf("Ready message %q, want %q", ready.Message, want)
	}
	cm := configMap(t, c, "team-a", "hello-banner")
	if cm.Data["message"] != "Hello, world" || cm.Data["version"] != "" || !metav1.IsControlledBy(cm, hello) {
		t.Errorf("ConfigMap hello-banner: data %v, owners %v; want the message only, controlled by the Banner", cm.Data, cm.OwnerReferences)
	}
	if !strings.Contains(strings.Join(hello.Finalizers, ","), exampleoperator.Finalizer) || hello.Status.ConfigMapName != "" {
		t.Errorf("Banner hello: finalizers %v, status.configMapName %q; want %s and none (0.1.0 does not record it)", hello.Finalizers, hello.Status.ConfigMapName, exampleoperator.Finalizer)
	}

	// A ConfigMap in the way: Conflict, naming it and the fix; it is left
	// alone, and the Banner proceeds once it is deleted.
	create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "taken-banner"}, Data: map[string]string{"mine": "yes"}})
	taken := banner("team-a", "taken", "Hi")
	create(t, c, taken)
	conflict := waitReady(t, c, taken, metav1.ConditionFalse, exampleoperator.ReasonConflict)
	if !strings.Contains(conflict.Message, "ConfigMap taken-banner exists") || !strings.Contains(conflict.Message, "kubectl delete configmap taken-banner -n team-a") {
		t.Errorf("Conflict message %q does not name the ConfigMap and the fix", conflict.Message)
	}
	if got := configMap(t, c, "team-a", "taken-banner"); got.Data["mine"] != "yes" || len(got.OwnerReferences) > 0 {
		t.Errorf("the ConfigMap in the way was changed: %v, owners %v", got.Data, got.OwnerReferences)
	}
	if err := c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "taken-banner"}}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, taken, metav1.ConditionTrue, exampleoperator.ReasonCreated)

	// A new message reaches the ConfigMap.
	hello.Spec.Message = "Hello again"
	if err := c.Update(ctx, hello); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() error {
		if got := configMap(t, c, "team-a", "hello-banner").Data["message"]; got != "Hello again" {
			return fmt.Errorf("ConfigMap hello-banner says %q", got)
		}
		return nil
	})
	waitReady(t, c, hello, metav1.ConditionTrue, exampleoperator.ReasonCreated)

	// Upgrade: the 0.2.0 CRD, then the 0.2.0 operator.
	stop()
	applyCRD(t, c, bundleCRD(t, "0.2.0"))
	startOperator(t, env, exampleoperator.Options{
		Version: "0.2.0", WatchNamespaces: []string{"team-a"}, LeaderElection: true, LeaderElectionNamespace: "ops",
	})
	testenv.Eventually(t, time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(hello), hello); err != nil {
			return err
		}
		cm := configMap(t, c, "team-a", "hello-banner")
		if cm.Data["version"] != "0.2.0" || hello.Status.ConfigMapName != "hello-banner" {
			return fmt.Errorf("after the upgrade: ConfigMap data %v, status.configMapName %q", cm.Data, hello.Status.ConfigMapName)
		}
		return nil
	})
	if c := meta.FindStatusCondition(hello.Status.Conditions, exampleoperator.ConditionReady); c == nil || !strings.HasSuffix(c.Message, "(example-operator 0.2.0)") {
		t.Errorf("Ready after the upgrade: %+v", c)
	}

	// Deleting a Banner deletes its ConfigMap; one it does not control
	// stays.
	create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "other-banner"}})
	other := banner("team-a", "other", "Hi")
	create(t, c, other)
	waitReady(t, c, other, metav1.ConditionFalse, exampleoperator.ReasonConflict)
	for _, b := range []*exampleoperator.Banner{hello, other} {
		if err := c.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
		waitGone(t, c, b)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "hello-banner"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap hello-banner outlived its Banner (err=%v)", err)
	}
	configMap(t, c, "team-a", "other-banner") // still there

	// Two operator versions later, the Banner of the namespace they do not
	// watch is untouched.
	if err := c.Get(ctx, client.ObjectKeyFromObject(elsewhere), elsewhere); err != nil {
		t.Fatal(err)
	}
	if len(elsewhere.Finalizers) > 0 || len(elsewhere.Status.Conditions) > 0 {
		t.Errorf("the Banner in unwatched team-b was reconciled: %v %+v", elsewhere.Finalizers, elsewhere.Status)
	}
}

func banner(ns, name, message string) *exampleoperator.Banner {
	return &exampleoperator.Banner{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       exampleoperator.BannerSpec{Message: message},
	}
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

// applyCRD creates or updates crd and waits until it is Established.
func applyCRD(t *testing.T, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := t.Context()
	current := &apiextensionsv1.CustomResourceDefinition{}
	switch err := c.Get(ctx, client.ObjectKeyFromObject(crd), current); {
	case apierrors.IsNotFound(err):
		create(t, c, crd)
	case err != nil:
		t.Fatal(err)
	default:
		crd.ResourceVersion = current.ResourceVersion
		if err := c.Update(ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), current); err != nil {
			return err
		}
		for _, cond := range current.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return errors.New("CRD not Established")
	})
}

// startOperator runs the operator until the returned function or the end
// of the test stops it.
func startOperator(t *testing.T, env *testenv.Env, o exampleoperator.Options) (stop func()) {
	t.Helper()
	mgr, err := exampleoperator.NewManager(env.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator %s: %v", o.Version, err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitReady waits until b's Ready condition has status and reason for
// its current generation, and returns it; b is refreshed.
func waitReady(t *testing.T, c client.Client, b *exampleoperator.Banner, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	testenv.Eventually(t, time.Minute, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(b.Status.Conditions, exampleoperator.ConditionReady)
		if cond == nil || cond.Status != status || cond.Reason != reason || cond.ObservedGeneration != b.Generation {
			return fmt.Errorf("Banner %s/%s: Ready %+v, want %s %s", b.Namespace, b.Name, cond, status, reason)
		}
		got = *cond
		return nil
	})
	return got
}

func waitGone(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s still there (err=%v, finalizers %v)", obj.GetName(), err, obj.GetFinalizers())
		}
		return nil
	})
}

func configMap(t *testing.T, c client.Client, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatalf("ConfigMap %s/%s: %v", ns, name, err)
	}
	return cm
}
