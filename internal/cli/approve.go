package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
)

// ApproveOptions configure Approve.
type ApproveOptions struct {
	// Installation and Namespace name the ExtensionInstallation.
	Installation, Namespace string
	// Digest, when set, is the digest the approver reviewed: Approve
	// refuses when the pending change has another one (it changed since).
	Digest string
	// Deny turns the change down instead (an Approval with decision
	// Deny), with Reason quoted to the requester.
	Deny   bool
	Reason string
	// Output is table (the default: the change as text, then what was
	// done) or yaml/json (an ApproveResult, printed once approved).
	Output Output
	Out    io.Writer
}

// ApproveResult is what approve -o yaml|json prints: the change and the
// Approval of it.
type ApproveResult struct {
	Installation string                  `json:"installation"`
	Change       *v1alpha1.PendingChange `json:"change"`
	// Approval is "namespace/name" of the Approval; Approver who the API
	// server recorded; Existed is set when it was there already.
	Approval string `json:"approval"`
	Approver string `json:"approver"`
	Existed  bool   `json:"existed,omitempty"`
}

// Approve prints the installation's pending change — versions, the
// permission diff, CRD changes, why it needs approval — and creates an
// Approval of exactly its digest, named <installation>-<digest prefix>
// and owned by the installation (deleted with it). The API server
// records the caller as the approver; Annex applies the change once it
// sees the Approval, unless the caller requested the change.
//
// With o.Deny it creates the Approval with decision Deny instead
// (<installation>-<digest prefix>-deny): Annex then refuses the change,
// with reason ApprovalDenied quoting o.Reason, until the spec changes or
// the denial is deleted. The requester may deny their own change.
//
// Errors: nothing pending, no approval needed, o.Digest not the pending
// digest, the change already denied (or, for a denial, approved), the
// caller is the change's requester (approving only), or the API server
// refuses (RBAC: create on approvals.annex.dev in the namespace).
func Approve(ctx context.Context, c client.Client, o ApproveOptions) error {
	inst := &v1alpha1.ExtensionInstallation{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Installation}, inst); err != nil {
		return installationError(o.Namespace, o.Installation, err)
	}
	name := o.Namespace + "/" + o.Installation
	pc := inst.Status.Change
	if pc == nil {
		return fmt.Errorf("%s has no pending change: there is nothing to approve", name)
	}
	data := o.Output == OutputYAML || o.Output == OutputJSON
	if !data {
		PrintChange(o.Out, inst)
	}
	result := func(a *v1alpha1.Approval, existed bool) error {
		return writeData(o.Out, o.Output, ApproveResult{Installation: name, Change: pc,
			Approval: a.Namespace + "/" + a.Name, Approver: a.Spec.Approver, Existed: existed})
	}
	switch {
	case pc.Approval == nil:
		return fmt.Errorf("the pending change of %s needs no approval (no ApprovalPolicy requires one); it waits for something else, see its Ready condition", name)
	case o.Digest != "" && o.Digest != pc.Digest:
		return fmt.Errorf("the pending change of %s is %s, not %s: it changed since it was reviewed; review it again", name, pc.Digest, o.Digest)
	case pc.Approval.State == v1alpha1.ApprovalDenied:
		return fmt.Errorf("the pending change of %s was denied by %s; delete that Approval first to have it reviewed again (kubectl get approvals -n %s)", name, pc.Approval.DeniedBy, o.Namespace)
	case pc.Approval.State == v1alpha1.ApprovalApproved && o.Deny:
		return fmt.Errorf("the pending change of %s is approved already (by %s) and being applied: it can no longer be denied", name, pc.Approval.ApprovedBy)
	case pc.Approval.State == v1alpha1.ApprovalApproved && data:
		return writeData(o.Out, o.Output, ApproveResult{Installation: name, Change: pc, Approver: pc.Approval.ApprovedBy, Existed: true})
	case pc.Approval.State == v1alpha1.ApprovalApproved:
		fmt.Fprintf(o.Out, "already approved by %s\n", pc.Approval.ApprovedBy)
		return nil
	}
	if !o.Deny {
		if me := WhoAmI(ctx, c); me != "" && me == pc.Approval.RequestedBy {
			return fmt.Errorf("you (%s) requested this change of %s: someone else must approve it", me, name)
		}
	}
	decision, verb := v1alpha1.DecisionApprove, "approved"
	if o.Deny {
		decision, verb = v1alpha1.DecisionDeny, "denied"
	}
	a := &v1alpha1.Approval{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: o.Namespace, Name: approvalName(o.Installation, pc.Digest, decision),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation", Name: inst.Name, UID: inst.UID,
			}},
		},
		Spec: v1alpha1.ApprovalSpec{Installation: o.Installation, Digest: pc.Digest, Decision: decision, Reason: o.Reason},
	}
	err := c.Create(ctx, a)
	switch {
	case apierrors.IsAlreadyExists(err):
		if err := c.Get(ctx, client.ObjectKeyFromObject(a), a); err != nil {
			return err
		}
		if data {
			return result(a, true)
		}
		fmt.Fprintf(o.Out, "Approval %s/%s (%s) of this change exists already (approver %s)\n", a.Namespace, a.Name, a.Spec.Decision, a.Spec.Approver)
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the API server refused the Approval: %w; approving or denying needs create on approvals.annex.dev in namespace %s", err, o.Namespace)
	case err != nil:
		return fmt.Errorf("creating the Approval of %s: %w", name, err)
	}
	if data {
		return result(a, false)
	}
	if o.Deny {
		fmt.Fprintf(o.Out, "%s as %s: Approval %s/%s (Deny) of %s; the installation stops with reason ApprovalDenied\n", verb, a.Spec.Approver, a.Namespace, a.Name, pc.Digest)
		return nil
	}
	fmt.Fprintf(o.Out, "%s as %s: Approval %s/%s of %s; Annex applies the change now\n", verb, a.Spec.Approver, a.Namespace, a.Name, pc.Digest)
	return nil
}

// approvalName is <installation>-<12 hex digits of the digest>, with
// "-deny" for a denial, shortened (names.Bounded) to the 253 characters
// of a name.
func approvalName(installation, digest string, decision v1alpha1.ApprovalDecision) string {
	short := strings.TrimPrefix(digest, "sha256:")
	if len(short) > 12 {
		short = short[:12]
	}
	if decision == v1alpha1.DecisionDeny {
		short += "-deny"
	}
	return names.Bounded(installation+"-"+short, names.MaxSubdomain)
}

// WhoAmI returns the caller's user name as the API server sees it, or ""
// when it cannot tell (then Annex alone refuses a self-approval).
func WhoAmI(ctx context.Context, c client.Client) string {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return ""
	}
	return review.Status.UserInfo.Username
}

// PrintChange prints an installation's pending change: what it does,
// its digest, how permissions and CRDs change, and where its approval
// stands.
func PrintChange(w io.Writer, inst *v1alpha1.ExtensionInstallation) {
	pc := inst.Status.Change
	what := "install " + pc.ToVersion
	if pc.FromVersion != "" {
		what = fmt.Sprintf("upgrade %s → %s", pc.FromVersion, pc.ToVersion)
		if pc.FromVersion == pc.ToVersion {
			what = pc.ToVersion + ": new values or content"
		}
	}
	fmt.Fprintf(w, "%s/%s (%s): %s (%s)\n", inst.Namespace, inst.Name, inst.Spec.Extension, what, pc.Event)
	fmt.Fprintf(w, "  digest: %s\n", pc.Digest)
	if pc.ArtifactDigest != "" {
		fmt.Fprintf(w, "  artifact: %s\n", pc.ArtifactDigest)
	}
	if pc.SignedBy != "" {
		fmt.Fprintf(w, "  signed by: %s\n", pc.SignedBy)
	}
	printList(w, "permissions grow", pc.PermissionsGrow)
	printList(w, "permissions shrink", pc.PermissionsShrink)
	a := pc.Approval
	if a == nil {
		return
	}
	printList(w, "CRD changes", a.CRDChanges)
	printList(w, fmt.Sprintf("approval %s (policy %s)", a.State, strings.Join(a.Policies, ", ")), a.Reasons)
	if a.RequestedBy != "" {
		fmt.Fprintf(w, "  requested by: %s\n", a.RequestedBy)
	}
	if a.ApprovedBy != "" {
		fmt.Fprintf(w, "  approved by: %s\n", a.ApprovedBy)
	}
	printList(w, "refused", a.Refused)
}

func printList(w io.Writer, title string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s:\n", title)
	for _, l := range lines {
		fmt.Fprintf(w, "    %s\n", l)
	}
}

// PendingApprovals lists the installations of namespace whose change
// waits for approval, for shell completion.
func PendingApprovals(ctx context.Context, c client.Reader, namespace string) ([]string, error) {
	var list v1alpha1.ExtensionInstallationList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var out []string
	for _, inst := range list.Items {
		if pc := inst.Status.Change; pc != nil && pc.Approval != nil && pc.Approval.State == v1alpha1.ApprovalPending {
			out = append(out, inst.Name)
		}
	}
	return out, nil
}
