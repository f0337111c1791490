package installation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/target"
)

// Tenancy: an installation acts as a ServiceAccount of its namespace
// (spec.serviceAccountName, or the manager's DefaultServiceAccount), so
// that a namespace's installations can do only what that ServiceAccount
// may; with RestrictTargets, an installation installs into its own
// namespace on the hub unless the hub admin, who owns Namespaces, allows
// more by annotating the installation's namespace.

// serviceAccountOf returns the ServiceAccount an installation acts as, or
// "" for the manager's own identity.
func (r *Reconciler) serviceAccountOf(inst *v1alpha1.ExtensionInstallation) string {
	return cmp.Or(inst.Spec.ServiceAccountName, r.DefaultServiceAccount)
}

// serviceAccountUser is the user name the API server gives a
// ServiceAccount.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// actingTarget is a Target whose applier impersonates a ServiceAccount.
type actingTarget struct {
	target.Cluster
	applier target.Applier
}

func (t actingTarget) Applier() target.Applier { return t.applier }

// actAs returns cluster acting as the installation's ServiceAccount, or
// cluster itself when it acts as the manager. On the hub the
// ServiceAccount must exist; a missing one blocks, saying so.
func (r *Reconciler) actAs(ctx context.Context, inst *v1alpha1.ExtensionInstallation, cluster target.Cluster) (target.Cluster, *block, error) {
	sa := r.serviceAccountOf(inst)
	if sa == "" {
		return cluster, nil, nil
	}
	if inst.Spec.Cluster == "" {
		err := r.Reader.Get(ctx, types.NamespacedName{Namespace: inst.Namespace, Name: sa}, &corev1.ServiceAccount{})
		if apierrors.IsNotFound(err) {
			return nil, wait(v1alpha1.ReasonPermissionDenied, fmt.Sprintf(
				"%s: ServiceAccount %s/%s does not exist; create it and bind it what %s needs, or name another with spec.serviceAccountName",
				saField(inst), inst.Namespace, sa, inst.Spec.Extension)), nil
		}
		if err != nil {
			return nil, nil, err
		}
	}
	a, err := cluster.ApplierAs(serviceAccountUser(inst.Namespace, sa))
	if err != nil {
		return nil, nil, err
	}
	return actingTarget{Cluster: cluster, applier: a}, nil, nil
}

// saField names where the ServiceAccount comes from.
func saField(inst *v1alpha1.ExtensionInstallation) string {
	if inst.Spec.ServiceAccountName != "" {
		return "spec.serviceAccountName"
	}
	return "the manager's --default-service-account"
}

// permissionBlock turns an apply or delete the API server refused for
// the installation's ServiceAccount into a block naming it, with the
// server's own words (verb, resource, namespace); nil for other errors.
// Granting the permission is an admin's change Annex does not watch, so
// it is retried with backoff.
func (r *Reconciler) permissionBlock(inst *v1alpha1.ExtensionInstallation, err error) *block {
	sa := r.serviceAccountOf(inst)
	if sa == "" || !apierrors.IsForbidden(err) {
		return nil
	}
	var status apierrors.APIStatus
	msg := err.Error()
	if errors.As(err, &status) {
		msg = status.Status().Message
	}
	return retry(v1alpha1.ReasonPermissionDenied, fmt.Sprintf(
		"%s: ServiceAccount %s/%s may not do what %s needs: %s; grant it (a Role or ClusterRole bound to it), or choose another ServiceAccount",
		saField(inst), inst.Namespace, sa, inst.Spec.Extension, msg))
}

// checkTargets refuses, with RestrictTargets, a spec.targetNamespace
// other than the installation's namespace and a spec.cluster, unless the
// installation's namespace carries the hub admin's grant:
// annex.dev/allow-target-namespaces and annex.dev/allow-clusters, each a
// comma-separated list or "*".
func (r *Reconciler) checkTargets(ctx context.Context, inst *v1alpha1.ExtensionInstallation) (*block, error) {
	if !r.RestrictTargets {
		return nil, nil
	}
	target, cluster := inst.Spec.TargetNamespace, inst.Spec.Cluster
	if (target == "" || target == inst.Namespace) && cluster == "" {
		return nil, nil
	}
	ns := &corev1.Namespace{}
	if err := r.Reader.Get(ctx, types.NamespacedName{Name: inst.Namespace}, ns); err != nil {
		return nil, err
	}
	refuse := func(field, value, annotation string) *block {
		return terminal(v1alpha1.ReasonTargetNotAllowed, fmt.Sprintf(
			"%s: installations in namespace %s may not install into %s %q (the manager restricts targets); a hub admin allows it with: kubectl annotate namespace %s %s=%s",
			field, inst.Namespace, strings.TrimPrefix(field, "spec."), value, inst.Namespace, annotation, value))
	}
	if target != "" && target != inst.Namespace && !granted(ns.Annotations[v1alpha1.AnnotationAllowTargetNamespaces], target) {
		return refuse("spec.targetNamespace", target, v1alpha1.AnnotationAllowTargetNamespaces), nil
	}
	if cluster != "" && !granted(ns.Annotations[v1alpha1.AnnotationAllowClusters], cluster) {
		return refuse("spec.cluster", cluster, v1alpha1.AnnotationAllowClusters), nil
	}
	return nil, nil
}

// granted reports whether a comma-separated grant list names value or is
// "*".
func granted(list, value string) bool {
	return slices.ContainsFunc(strings.Split(list, ","), func(g string) bool {
		g = strings.TrimSpace(g)
		return g == "*" || g == value
	})
}
