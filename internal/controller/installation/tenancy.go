package installation

import (
	"context"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/target"
	"github.com/annex-platform/annex/internal/tenancy"
)

// Tenancy (internal/tenancy): an installation acts as a ServiceAccount of
// its namespace, and with RestrictTargets installs only where the hub
// admin allows. These turn its refusals into blocks.

func (r *Reconciler) tenancy() tenancy.Policy {
	return tenancy.Policy{DefaultServiceAccount: r.DefaultServiceAccount, RestrictTargets: r.RestrictTargets}
}

// actAs returns cluster acting as the installation's ServiceAccount
// (tenancy.Policy.ActAs); a missing ServiceAccount waits.
func (r *Reconciler) actAs(ctx context.Context, inst *v1alpha1.ExtensionInstallation, cluster target.Cluster) (target.Cluster, *block, error) {
	acting, refused, err := r.tenancy().ActAs(ctx, r.Reader, inst, cluster)
	if refused != nil {
		return nil, wait(refused.Reason, refused.Message), nil
	}
	return acting, nil, err
}

// permissionBlock is a retried block naming the installation's
// ServiceAccount when err is the API server refusing it; nil otherwise.
func (r *Reconciler) permissionBlock(inst *v1alpha1.ExtensionInstallation, err error) *block {
	if refused := r.tenancy().Forbidden(inst, err); refused != nil {
		return retry(refused.Reason, refused.Message)
	}
	return nil
}

// checkTargets stops, terminally, an installation whose targets the
// manager does not allow (tenancy.Policy.CheckTargets).
func (r *Reconciler) checkTargets(ctx context.Context, inst *v1alpha1.ExtensionInstallation) (*block, error) {
	refused, err := r.tenancy().CheckTargets(ctx, r.Reader, inst)
	if refused != nil {
		return terminal(refused.Reason, refused.Message), nil
	}
	return nil, err
}
