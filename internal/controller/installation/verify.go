package installation

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/readiness"
	"github.com/annex-platform/annex/internal/verify"
)

// verify asks who signed the chosen version's artifact, before it is
// fetched and any engine sees it, and records the answer in
// status.artifact and the Verified condition. Under an Enforce policy an
// artifact that is not verified stops the installation with a terminal
// condition whose reason says why (SignatureMissing, SignatureInvalid,
// IdentityMismatch, VerificationPolicyInvalid): nothing is applied, and
// what is installed stays. Under Audit it goes on, and the failure is
// told once in a Warning Event. verify.Judge decides; this step asks
// the Verifier.
func (r *Reconciler) verify(ctx context.Context, s *scope) (ctrl.Result, error) {
	v := s.choice.Version
	var outcome *v1alpha1.ArtifactVerification
	var err error
	if r.Verifier != nil {
		outcome, err = r.Verifier.Verify(ctx, fmt.Sprintf("%s %s", s.inst.Spec.Extension, v.Version), v.Source, s.inst.Spec.VerifyMode)
	}
	verdict := verify.Judge(s.inst, v, outcome, err, s.written.Status.Artifact)
	if verdict.Warning != "" {
		r.event(s, "Warning", verdict.Reason, verdict.Warning)
	}
	if verdict.Stop == nil {
		return ctrl.Result{}, nil
	}
	s.block = verdict.Stop
	readiness.Set(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, s.block.Reason, s.block.Message)
	if s.block.Kind == blockRetry {
		return ctrl.Result{}, s.block
	}
	return ctrl.Result{}, nil
}
