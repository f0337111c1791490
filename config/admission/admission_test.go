package admission_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
)

// The validating half of annex-requested-by refuses a forged requester
// of a profile on its own: with the mutating half unbound (a cluster
// where it is missing or lags), a profile that names someone else as its
// requester is refused, on create and on a write that leaves the spec
// alone, with a message naming the annotation and the user it must be.
func TestForgedProfileRequesterRefused(t *testing.T) {
	ctx := context.Background()
	env := testenv.Start(t)
	review := &authenticationv1.SelfSubjectReview{}
	if err := env.Client.Create(ctx, review); err != nil {
		t.Fatal(err)
	}
	me := review.Status.UserInfo.Username

	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "annex-requested-by"}}
	if err := env.Client.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	profile := func(name, requestedBy string) *v1alpha1.ExtensionProfile {
		return &v1alpha1.ExtensionProfile{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1alpha1.AnnotationRequestedBy: requestedBy}},
			Spec: v1alpha1.ExtensionProfileSpec{IncludeHub: true, Namespace: "default",
				Extensions: []v1alpha1.ProfileExtension{{Name: "podinfo"}}},
		}
	}
	// Once the API server stops stamping, a forged requester reaches the
	// validating policy.
	var err error
	testenv.Eventually(t, time.Minute, func() error {
		err = env.Client.Create(ctx, profile("forged", "someone-else"), client.DryRunAll)
		if !apierrors.IsForbidden(err) {
			return fmt.Errorf("a forged requester is still taken (the mutating policy still stamps): err = %v", err)
		}
		return nil
	})
	want := "metadata.annotations[annex.dev/requested-by] is written by the API server: it names the user who last changed spec (" + me + "), not someone-else"
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("refusal %q does not say %q", err, want)
	}

	// The true requester is taken; forging it later, spec unchanged, is not.
	p := profile("honest", me)
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(p.DeepCopy())
	p.Annotations[v1alpha1.AnnotationRequestedBy] = "someone-else"
	if err := env.Client.Patch(ctx, p, patch); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "it names the user who last changed spec ("+me+")") {
		t.Fatalf("a forged requester on a metadata write: err = %v, want Forbidden naming %s", err, me)
	}
}
