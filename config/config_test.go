// Package config_test checks that `kubectl apply -k config/default` still
// installs Annex: kustomize builds it, and a real API server accepts every
// object it yields.
package config_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/internal/testenv"
)

// TestDefaultBuilds runs kustomize on config/default and checks what a
// cluster needs: every CRD of crd/bases, the manager's Deployment with
// leader election, its RBAC and the admission policies; then a real API
// server validates each object (server-side apply, dry-run, strict field
// validation).
func TestDefaultBuilds(t *testing.T) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "default")
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	var objs []*unstructured.Unstructured
	have := map[string]bool{}
	crds := 0
	for _, r := range resources.Resources() {
		// Through YAML: Map() holds Go ints, which unstructured refuses.
		raw, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
		have[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = true
		if u.GetKind() == "CustomResourceDefinition" {
			crds++
		}
	}
	bases, _ := filepath.Glob("crd/bases/*.yaml")
	if crds != len(bases) || crds == 0 {
		t.Errorf("%d CRDs, want the %d of config/crd/bases", crds, len(bases))
	}
	for _, want := range []string{
		"Namespace//annex-system", "Deployment/annex-system/annex-manager", "ServiceAccount/annex-system/annex-manager",
		"ClusterRole//annex-manager", "ClusterRoleBinding//annex-manager", "Role/annex-system/annex-leader-election",
		"ClusterRoleBinding//annex-extension-applier", "MutatingAdmissionPolicy//annex-requested-by", "ValidatingAdmissionPolicy//annex-approver", "ValidatingAdmissionPolicy//annex-values-request", "ClusterRole//annex-extension-viewer",
		"ClusterRole//annex-rollout-approver",
	} {
		if !have[want] {
			t.Errorf("config/default has no %s", want)
		}
	}
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		if !slices.Contains(args, "--leader-elect") || args[0] != "manager" {
			t.Errorf("the manager's args %q, want manager with --leader-elect", args)
		}
	}

	env := testenv.Start(t)
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "annex-system"}}); err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		err := env.Client.Patch(ctx, u.DeepCopy(), client.Apply, client.DryRunAll, client.FieldValidation("Strict"),
			client.ForceOwnership, client.FieldOwner("config-test"))
		if err != nil {
			t.Errorf("the API server refuses %s %s: %v", u.GetKind(), strings.TrimPrefix(u.GetNamespace()+"/"+u.GetName(), "/"), err)
		}
	}
}
