// Package tenancy is what an installation may do in a multi-tenant hub:
// it acts as a ServiceAccount of its namespace (spec.serviceAccountName,
// or the manager's default), so that a namespace's installations can do
// only what that ServiceAccount may; with RestrictTargets, it installs
// into its own namespace on the hub unless the hub admin, who owns
// Namespaces, allows more by annotating the installation's namespace.
// It reads the hub through the reader it is given and returns Refusals
// in words for the user; the installation controller decides what each
// means for the installation (wait, retry, stop).
package tenancy

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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/target"
)

// Policy is the manager's tenancy.
type Policy struct {
	// DefaultServiceAccount is the ServiceAccount, in each installation's
	// namespace, that installations naming none act as; empty: they act
	// as the manager.
	DefaultServiceAccount string
	// RestrictTargets refuses a spec.targetNamespace other than the
	// installation's namespace and any spec.cluster unless the hub admin
	// granted it on the installation's namespace.
	RestrictTargets bool
}

// Refusal is why an installation may not do what it asks, for the user.
type Refusal struct{ Reason, Message string }

func refuse(reason, message string) *Refusal { return &Refusal{Reason: reason, Message: message} }

// ServiceAccount returns the ServiceAccount inst acts as, or "" for the
// manager's own identity.
func (p Policy) ServiceAccount(inst *v1alpha1.ExtensionInstallation) string {
	return cmp.Or(inst.Spec.ServiceAccountName, p.DefaultServiceAccount)
}

// serviceAccountUser is the user name the API server gives a
// ServiceAccount.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// acting is a Cluster whose applier impersonates a ServiceAccount.
type acting struct {
	target.Cluster
	applier target.Applier
}

func (t acting) Applier() target.Applier { return t.applier }

// ActAs returns cluster acting as inst's ServiceAccount, or cluster
// itself when it acts as the manager. On the hub the ServiceAccount must
// exist; a missing one is a Refusal to wait on (it may be created).
// Errors are the API server's.
func (p Policy) ActAs(ctx context.Context, reader client.Reader, inst *v1alpha1.ExtensionInstallation, cluster target.Cluster) (target.Cluster, *Refusal, error) {
	sa := p.ServiceAccount(inst)
	if sa == "" {
		return cluster, nil, nil
	}
	if inst.Spec.Cluster == "" {
		err := reader.Get(ctx, types.NamespacedName{Namespace: inst.Namespace, Name: sa}, &corev1.ServiceAccount{})
		if apierrors.IsNotFound(err) {
			return nil, refuse(v1alpha1.ReasonPermissionDenied, fmt.Sprintf(
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
	return acting{Cluster: cluster, applier: a}, nil, nil
}

// saField names where the ServiceAccount comes from.
func saField(inst *v1alpha1.ExtensionInstallation) string {
	if inst.Spec.ServiceAccountName != "" {
		return "spec.serviceAccountName"
	}
	return "the manager's --default-service-account"
}

// Forbidden turns an apply or delete the API server refused for inst's
// ServiceAccount into a Refusal naming it, with the server's own words
// (verb, resource, namespace); nil for other errors. Granting the
// permission is an admin's change Annex does not watch, so the caller
// retries it with backoff.
func (p Policy) Forbidden(inst *v1alpha1.ExtensionInstallation, err error) *Refusal {
	sa := p.ServiceAccount(inst)
	if sa == "" || !apierrors.IsForbidden(err) {
		return nil
	}
	var status apierrors.APIStatus
	msg := err.Error()
	if errors.As(err, &status) {
		msg = status.Status().Message
	}
	return refuse(v1alpha1.ReasonPermissionDenied, fmt.Sprintf(
		"%s: ServiceAccount %s/%s may not do what %s needs: %s; grant it (a Role or ClusterRole bound to it), or choose another ServiceAccount",
		saField(inst), inst.Namespace, sa, inst.Spec.Extension, msg))
}

// CheckTargets refuses, with RestrictTargets, a spec.targetNamespace
// other than the installation's namespace and a spec.cluster, unless the
// installation's namespace carries the hub admin's grant:
// annex.dev/allow-target-namespaces and annex.dev/allow-clusters, each a
// comma-separated list or "*". A Refusal stands until the spec or the
// grant changes. Errors are the API server's.
func (p Policy) CheckTargets(ctx context.Context, reader client.Reader, inst *v1alpha1.ExtensionInstallation) (*Refusal, error) {
	if !p.RestrictTargets {
		return nil, nil
	}
	target, cluster := inst.Spec.TargetNamespace, inst.Spec.Cluster
	if (target == "" || target == inst.Namespace) && cluster == "" {
		return nil, nil
	}
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, types.NamespacedName{Name: inst.Namespace}, ns); err != nil {
		return nil, err
	}
	refused := func(field, value, annotation string) *Refusal {
		return refuse(v1alpha1.ReasonTargetNotAllowed, fmt.Sprintf(
			"%s: installations in namespace %s may not install into %s %q (the manager restricts targets); a hub admin allows it with: kubectl annotate namespace %s %s=%s",
			field, inst.Namespace, strings.TrimPrefix(field, "spec."), value, inst.Namespace, annotation, value))
	}
	if target != "" && target != inst.Namespace && !granted(ns.Annotations[v1alpha1.AnnotationAllowTargetNamespaces], target) {
		return refused("spec.targetNamespace", target, v1alpha1.AnnotationAllowTargetNamespaces), nil
	}
	if cluster != "" && !granted(ns.Annotations[v1alpha1.AnnotationAllowClusters], cluster) {
		return refused("spec.cluster", cluster, v1alpha1.AnnotationAllowClusters), nil
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
