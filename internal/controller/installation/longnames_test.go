package installation_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// TestLongInstallationName: an installation whose name is far longer than
// a label value installs behind a hook that answers late (so the watch
// of the hook's resource, not the asking reconcile, must find the
// installation), upgrades with new values, and uninstalls; its labels,
// records and HookRequests have valid names and are found again.
func TestLongInstallationName(t *testing.T) {
	ctx := context.Background()
	gvk := schema.GroupVersionKind{Group: "late.test.annex.dev", Version: "v1", Kind: "LateCheck"}
	installCRD(t, hookCRD(gvk.Group, gvk.Kind))
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata: {message: {{ .Values.message | default \"hello\" | quote }}}\n"
	ns, _ := setup(t, helmrepo.Chart{Name: "long-inst", Version: "1.0.0", Files: map[string]string{"templates/cm.yaml": cm}})
	answerHooks(t, gvk, ns, func(obj *unstructured.Unstructured) (string, string) {
		if time.Since(obj.GetCreationTimestamp().Time) < 3*time.Second {
			return "", "" // longer than the asking reconcile waits
		}
		return v1alpha1.ConditionSucceeded, "looks fine"
	})
	registerHook(t, "late-"+ns, "long-inst", gvk)

	name := "web-" + strings.Repeat("w", 236) // 240 characters: its ConfigMap's name still fits
	inst := install(t, ns, name, "long-inst", "")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	label := client.MatchingLabels{v1alpha1.LabelInstallationName: names.LabelValue(name)}
	obj, err := get(t, configMapGVK, ns, name+"-config")
	if err != nil {
		t.Fatal(err)
	}
	if v := obj.GetLabels()[v1alpha1.LabelInstallationName]; v != names.LabelValue(name) || len(validation.IsValidLabelValue(v)) > 0 {
		t.Fatalf("the ConfigMap's label %s=%q, want %q", v1alpha1.LabelInstallationName, v, names.LabelValue(name))
	}
	if reqs := hookRequests(t, ns); len(reqs) != 1 || reqs[0].Labels[v1alpha1.LabelInstallationName] != names.LabelValue(name) {
		t.Fatalf("HookRequests: %+v", reqs)
	}

	// New values: a second revision, asked of the hook again, recorded
	// beside the first.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"message":"again"}`)}
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if obj, err = get(t, configMapGVK, ns, name+"-config"); err != nil {
		t.Fatal(err)
	}
	if msg, _, _ := unstructured.NestedString(obj.Object, "data", "message"); msg != "again" {
		t.Fatalf("message %q after the upgrade", msg)
	}
	var records corev1.SecretList
	if err := env.Client.List(ctx, &records, client.InNamespace(ns), label); err != nil {
		t.Fatal(err)
	}
	var recordNames []string
	for _, sec := range records.Items {
		if sec.Type == v1alpha1.RevisionSecretType {
			recordNames = append(recordNames, sec.Name)
		}
	}
	if len(recordNames) != 2 || len(got.Status.History) != 2 {
		t.Fatalf("records %v and %d revisions in the history, want 2 of each", recordNames, len(got.Status.History))
	}
	if n := len(hookRequests(t, ns)); n != 2 {
		t.Fatalf("%d HookRequests, want one per change", n)
	}

	// Uninstall removes what it installed.
	if err := env.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, name)
	if _, err := get(t, configMapGVK, ns, name+"-config"); !apierrors.IsNotFound(err) {
		t.Fatal(fmt.Errorf("the ConfigMap is still there after the uninstall (err=%v)", err))
	}
}
