// Package admission embeds the admission policies of the approval gate
// (*.yaml here, also applied by `kubectl apply -k config/default`) and
// installs them, so that `annex dev` and the tests run with what a
// cluster gets. They make the API server record who asked for a change
// (annotation annex.dev/requested-by on ExtensionInstallations and
// ExtensionProfiles) and who approved it (spec.approver of Approvals),
// values nobody can forge; and they put the uninstall finalizer on every
// new ExtensionInstallation, a write the manager then does not make.
package admission

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
)

//go:embed *.yaml
var files embed.FS

// Objects returns the policies and their bindings.
func Objects() ([]*unstructured.Unstructured, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, name := range names {
		if name == "kustomization.yaml" {
			continue
		}
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if len(u.Object) > 0 {
				out = append(out, u)
			}
		}
	}
	return out, nil
}

// Install applies the policies (server-side apply, field manager
// "annex") and waits, at most timeout, until the API server enforces
// them: policies take effect a moment after they are written, and a
// request in that moment would go unrecorded. It needs the Annex CRDs and
// the namespace "default". Enforcement is observed with dry-run
// requests, which leave nothing behind.
func Install(ctx context.Context, c client.Client, timeout time.Duration) error {
	objs, err := Objects()
	if err != nil {
		return err
	}
	for _, u := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("annex"), client.ForceOwnership); err != nil {
			return fmt.Errorf("installing %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = enforced(ctx, c)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("the admission policies of config/admission are not enforced after %s (the API server must be 1.36 or later): %w", timeout, last)
	}
	return err
}

// probeApprover is what a probe Approval claims as its approver; the API
// server replaces it with the real user once the policies hold.
const probeApprover = "annex-admission-probe"

// enforced returns nil when the policies hold: an Approval's approver
// and an installation's requester are stamped, and the installation has
// the uninstall finalizer, seen on dry-run creates.
func enforced(ctx context.Context, c client.Client) error {
	probe := metav1.ObjectMeta{Namespace: "default", Name: "annex-admission-probe"}
	a := &v1alpha1.Approval{ObjectMeta: probe, Spec: v1alpha1.ApprovalSpec{
		Installation: "probe", Digest: "sha256:" + strings.Repeat("0", 64), Approver: probeApprover,
	}}
	if err := c.Create(ctx, a, client.DryRunAll); err != nil {
		return err
	}
	if a.Spec.Approver == probeApprover {
		return fmt.Errorf("policy annex-approver does not set spec.approver yet")
	}
	inst := &v1alpha1.ExtensionInstallation{ObjectMeta: probe, Spec: v1alpha1.ExtensionInstallationSpec{Extension: "probe"}}
	if err := c.Create(ctx, inst, client.DryRunAll); err != nil {
		return err
	}
	if inst.Annotations[v1alpha1.AnnotationRequestedBy] == "" {
		return fmt.Errorf("policy annex-requested-by does not set %s yet", v1alpha1.AnnotationRequestedBy)
	}
	if !slices.Contains(inst.Finalizers, v1alpha1.FinalizerUninstall) {
		return fmt.Errorf("policy annex-uninstall-finalizer does not add %s yet", v1alpha1.FinalizerUninstall)
	}
	return nil
}
