package installation

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
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
// told once in a Warning Event.
func (r *Reconciler) verify(ctx context.Context, s *scope) (ctrl.Result, error) {
	v := s.choice.Version
	var outcome *v1alpha1.ArtifactVerification
	if r.Verifier != nil {
		var err error
		outcome, err = r.Verifier.Verify(ctx, fmt.Sprintf("%s %s", s.inst.Spec.Extension, v.Version), v.Source, s.inst.Spec.VerifyMode)
		if err != nil {
			s.block = retry(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("verifying the signature of %s %s from %s: %v; Annex tries again: check that the registry and the catalog's spec.verify keys can be read by the manager",
				s.inst.Spec.Extension, v.Version, v.Source.URL, err))
			readiness.Set(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, s.block.Reason, s.block.Message)
			return ctrl.Result{}, s.block
		}
	}
	before := s.written.Status.Artifact
	verify.SetArtifact(s.inst, v, outcome)
	if outcome == nil || outcome.Verified {
		return ctrl.Result{}, nil
	}
	if outcome.Mode == v1alpha1.VerificationAudit {
		if before == nil || !equality.Semantic.DeepEqual(before.Verification, outcome) {
			r.event(s, "Warning", outcome.Reason, "spec.verify is Audit, so Annex installs it anyway: "+outcome.Message)
		}
		return ctrl.Result{}, nil
	}
	s.block = terminal(outcome.Reason, outcome.Message)
	readiness.Set(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, s.block.Reason, s.block.Message)
	return ctrl.Result{}, nil
}
