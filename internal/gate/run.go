package gate

// This file runs the gates of a change in their order (Run) and of an
// uninstall (Uninstall), and says what each verdict means for the
// installation: the stop that blocks the change (its kind, reason and
// message), status.change and status.crdChanges, and the Events told. It
// is pure: what the gates read and ask (the installed revision, the kinds
// the target cluster serves, its CRDs, the approvals, the hooks) is
// behind Port, which the installation controller implements.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/crdcheck"
	"github.com/annex-platform/annex/internal/fleet"
	"github.com/annex-platform/annex/internal/kubeapis"
	"github.com/annex-platform/annex/internal/news"
)

// Port is what the gates read and ask about one installation's change.
// Errors are the API server's, returned unwrapped.
type Port interface {
	// Installed returns the installed revision's CRDs and objects.
	Installed() ([]*unstructured.Unstructured, error)
	// Serves says whether the target cluster serves gvk.
	Serves(gvk schema.GroupVersionKind) (kubeapis.Answer, error)
	// CRDs returns the target cluster's CRDs of these names; a name it
	// has none of is absent.
	CRDs(names []string) (map[string]*unstructured.Unstructured, error)
	// Approval judges c, whose permissions grow by permissionsGrow,
	// against the ApprovalPolicies and Approvals (internal/approval): nil
	// when c needs no approval.
	Approval(c *Pending, permissionsGrow []string) (*v1alpha1.ChangeApproval, error)
	// AskHooks asks the registered Hooks about c; a zero outcome's
	// Request: no Hook selects it.
	AskHooks(c HookChange) (HookOutcome, error)
	// Event tells a person, as an Event of the installation.
	Event(eventType, reason, message string)
	// Now is the time, for how long a change waits for its hooks.
	Now() time.Time
}

// Input is what the gates judge, of one installation.
type Input struct {
	// Inst is the installation: Run reads its spec and status and sets
	// status.change, status.crdChanges and the Warnings condition.
	Inst *v1alpha1.ExtensionInstallation
	// Change is what this reconcile would apply; nil when nothing.
	Change *Pending
	// Version is the version the change applies, Namespace the target
	// namespace.
	Version, Namespace string
	// Cleanup are the objects the cleanup plan of the change may apply,
	// checked for served kinds with the change's.
	Cleanup []*unstructured.Unstructured
	// Applies are the objects this reconcile applies when it judges no
	// change (a resumed plan, the correction of drift): under crdPolicy
	// Skip the installed CRDs are applied in place of theirs too.
	Applies []*unstructured.Unstructured
	// Warnings are the engine's warnings about the release, shown with
	// what the CRD gate let through.
	Warnings []string
}

// Outcome is what the gates make of a change.
type Outcome struct {
	// Stop blocks the change (nil: it goes on in this reconcile): Retry
	// when the target cluster could not be read, Wait while an approval
	// or a hook has not answered, Terminal when a gate refused.
	Stop *news.Stop
	// RequeueAfter is when a change waiting for its hooks is looked at
	// again (zero: their answers wake it).
	RequeueAfter time.Duration
	// Keep are the installed CRDs this reconcile applies in place of the
	// release's (crdPolicy Skip), by name.
	Keep map[string]*unstructured.Unstructured
}

// Run runs, for in.Change, what must agree before it touches the cluster,
// in order: it is described in status.change (versions, digest, how the
// extension's permissions change), every object it may apply must be of
// a served kind, its CRDs must pass spec.upgrade.crdPolicy, it must be
// approved when a policy says so, and the Hooks must agree. The first
// gate that does not agree stops the change (Outcome.Stop), and
// status.change shows it with what each gate said; when every gate
// agrees status.change is cleared. Without a change status.change is
// cleared too, and under crdPolicy Skip the installed CRDs are kept.
func Run(in Input, p Port) (Outcome, error) {
	var out Outcome
	if in.Change == nil {
		in.Inst.Status.Change = nil
		if err := keepInstalledCRDs(in, p, &out); err != nil {
			out.Stop = retry(v1alpha1.ReasonClusterUnavailable, fmt.Sprintf("reading the CustomResourceDefinitions installed on %s: %v", fleet.ClusterName(in.Inst.Spec.Cluster), err))
		}
		return out, nil
	}
	for _, g := range []func(Input, Port, *Outcome) error{describeChange, checkServed, checkCRDs, requireApproval, askHooks} {
		if err := g(in, p, &out); err != nil || out.Stop != nil || out.RequeueAfter != 0 {
			return out, err
		}
	}
	in.Inst.Status.Change = nil
	return out, nil
}

// describeChange shows the change in status.change: its versions, its
// digest, and how the permissions of the extension's objects change
// against the installed revision's.
func describeChange(in Input, p Port, _ *Outcome) error {
	installed, err := p.Installed()
	if err != nil {
		return err
	}
	diff := Diff(Derive(installed, in.Namespace), Derive(in.Change.Objects, in.Namespace))
	in.Inst.Status.Change = Describe(in.Change, diff, in.Inst.Status.Artifact, in.Inst.Status.Change)
	return nil
}

// checkServed refuses a change the target cluster cannot take, before
// any other gate asks anyone and before anything is applied: every object
// the change may apply (hooks, every plan's objects, the cleanup plan's)
// must be of a kind the cluster serves in the object's apiVersion, or of
// a kind a CRD of the change defines in a version that CRD serves.
// Otherwise the change stops with a terminal block naming each object,
// its apiVersion, what the cluster serves instead, and, for an API
// Kubernetes removed (kubeapis.Removals), the release that removed it and
// its replacement: a removed API never comes back, so retrying cannot
// help. A new spec, a new Kubernetes version or another installation on
// the cluster changing wakes the installation to check again.
func checkServed(in Input, p Port, out *Outcome) error {
	inst := in.Inst
	unserved, err := kubeapis.Check(slices.Concat(in.Change.Objects, in.Cleanup), in.Namespace, p.Serves)
	if err != nil {
		out.Stop = retry(v1alpha1.ReasonClusterUnavailable, fmt.Sprintf("reading the API kinds %s serves: %v", fleet.ClusterName(inst.Spec.Cluster), err))
		return nil
	}
	if len(unserved) > 0 {
		out.Stop = terminal(v1alpha1.ReasonKindNotServed, kubeapis.UnservedMessage(
			inst.Spec.Extension, in.Version, fleet.ClusterName(inst.Spec.Cluster), inst.Status.ClusterVersion, unserved))
	}
	return nil
}

// checkCRDs is the gate of spec.upgrade.crdPolicy: every CRD the change
// may apply, whatever engine brought it (a chart's crds/ or templates, a
// package's plans, a bundle's), is compared with the CRD of that name on
// the target cluster, status.storedVersions included, before anything is
// applied and before any approval or hook is asked. Strict refuses a
// breaking change (terminal, reason UnsafeCRDChange, naming each CRD,
// version and field); Warn and Force let it through and the Warnings
// condition and an Event list what changed; Skip applies the installed
// CRDs in place of the change's (Outcome.Keep). The verdict is
// crdcheck.Gate's.
func checkCRDs(in Input, p Port, out *Outcome) error {
	inst := in.Inst
	proposed := crdcheck.In(in.Change.Objects)
	prev := inst.Status.CRDChanges
	inst.Status.CRDChanges = nil
	if len(proposed) == 0 {
		crdcheck.ShowWarnings(inst, "", in.Warnings)
		return nil
	}
	installed, err := p.CRDs(crdcheck.Names(proposed))
	if err != nil {
		out.Stop = retry(v1alpha1.ReasonClusterUnavailable, fmt.Sprintf("reading the CustomResourceDefinitions installed on %s: %v", fleet.ClusterName(inst.Spec.Cluster), err))
		return nil
	}
	v := crdcheck.Gate(inst, in.Version, prev, proposed, installed)
	inst.Status.CRDChanges = v.Report
	switch {
	case v.Refusal != "":
		out.Stop = terminal(v1alpha1.ReasonUnsafeCRDChange, v.Refusal)
	case !v.Resumed:
		out.Keep = v.Keep
		crdcheck.ShowWarnings(inst, v.Warning, in.Warnings)
		if v.Warning != "" {
			p.Event(corev1.EventTypeWarning, v.EventReason, v.Warning)
		}
	}
	return nil
}

// keepInstalledCRDs, under spec.upgrade.crdPolicy Skip, applies the
// installed CRDs in place of the release's also when no change is
// judged: a resumed plan and the correction of drift would otherwise
// apply the release's CRDs that the change kept out.
func keepInstalledCRDs(in Input, p Port, out *Outcome) error {
	if crdcheck.PolicyOf(in.Inst) != v1alpha1.CRDPolicySkip {
		return nil
	}
	proposed := crdcheck.In(in.Applies)
	if len(proposed) == 0 {
		return nil
	}
	installed, err := p.CRDs(crdcheck.Names(proposed))
	if err != nil {
		return err
	}
	j, err := crdcheck.Judge(crdcheck.Skip, proposed, installed)
	if err != nil {
		return nil // the apply reports a CRD the API server refuses
	}
	out.Keep = j.Keep
	return nil
}

// requireApproval is the approval gate: a change that needs approval
// waits, before anything is applied, until an Approval in the
// installation's namespace names its digest, and status.change.approval
// says why and what to run; a denied one stops.
func requireApproval(in Input, p Port, out *Outcome) error {
	c, pc := in.Change, in.Inst.Status.Change
	a, err := p.Approval(c, pc.PermissionsGrow)
	if err != nil {
		return err
	}
	pc.Approval = a
	switch {
	case a == nil:
	case a.State == v1alpha1.ApprovalApproved:
		p.Event(corev1.EventTypeNormal, "Approved", fmt.Sprintf("%s approved the change to %s (digest %s), requested by %s",
			a.ApprovedBy, c.To, c.Digest, a.RequestedBy))
	case a.State == v1alpha1.ApprovalDenied:
		out.Stop = terminal(v1alpha1.ReasonApprovalDenied, DenialMessage(in.Inst, c, a))
	default:
		out.Stop = wait(v1alpha1.ReasonApprovalRequired, WaitMessage(in.Inst, c, a))
		if len(a.Refused) > 0 {
			out.Stop.Reason = v1alpha1.ReasonApprovalRefused
		}
	}
	return nil
}

// askHooks is the gate of the hooks: it asks them about the change, shows
// their verdict in status.change.hooks, and blocks while one has not
// answered (wait, until the first hook's deadline at the latest) or when
// one refused under failurePolicy Fail (terminal: the change waits until
// the hook answers otherwise, or the spec changes and with it the
// change's digest).
func askHooks(in Input, p Port, out *Outcome) error {
	c := in.Change
	answer, err := p.AskHooks(HookChange{
		Installation: in.Inst, Event: c.Event, From: c.From, To: c.To,
		ArtifactDigest: c.ArtifactDigest, Digest: c.Digest, Objects: c.Objects, TargetNamespace: in.Namespace,
	})
	if err != nil || answer.Request == "" {
		return err
	}
	if in.Inst.Status.Change != nil {
		in.Inst.Status.Change.Hooks = answer.Summary()
	}
	switch answer.State {
	case v1alpha1.HookFailed:
		out.Stop = terminal(v1alpha1.ReasonHookRefused, answer.Refusal(c.Event))
	case v1alpha1.HookPending:
		out.Stop = wait(v1alpha1.ReasonHookPending, answer.Message)
		out.RequeueAfter = answer.RecheckAfter(p.Now())
	}
	return nil
}

// Uninstall runs the PreUninstall hooks of inst before an uninstall
// deletes anything, over installed, the installed revision's CRDs and
// objects, in namespace, the target namespace. It returns done false
// while they hold the uninstall (Outcome.Stop says why). A namespace
// being deleted cannot hold a HookRequest: its installations uninstall
// without asking.
func Uninstall(inst *v1alpha1.ExtensionInstallation, installed []*unstructured.Unstructured, namespace string, p Port) (out Outcome, done bool, err error) {
	var artifactDigest, valuesDigest string
	if len(inst.Status.History) > 0 {
		artifactDigest, valuesDigest = inst.Status.History[0].ArtifactDigest, inst.Status.History[0].ValuesDigest
	}
	c, err := UninstallPending(inst.Status.InstalledVersion, artifactDigest, valuesDigest, installed)
	if err != nil {
		return out, false, err
	}
	if pc := inst.Status.Change; pc == nil || pc.Digest != c.Digest {
		inst.Status.Change = &v1alpha1.PendingChange{Event: c.Event, FromVersion: c.From, Digest: c.Digest}
	}
	err = askHooks(Input{Inst: inst, Change: c, Namespace: namespace}, p, &out)
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		p.Event(corev1.EventTypeWarning, "HooksSkipped", fmt.Sprintf(
			"namespace %s is being deleted: the PreUninstall hooks cannot be asked (%v)", inst.Namespace, err))
		err = nil
	}
	if err != nil || out.Stop != nil || out.RequeueAfter != 0 {
		return out, false, err
	}
	inst.Status.Change = nil
	return out, true, nil
}

// Scope narrows the grants of objs, what the change of inst to version
// would apply, to the namespaces spec.scopedGrants names (ScopeGrants),
// the scope of each resource read with scopeOf. A scope that cannot be
// read stops the installation (retried); what cannot be narrowed soundly
// stops it (terminal), saying what to do.
func Scope(inst *v1alpha1.ExtensionInstallation, version string, objs []*unstructured.Unstructured,
	scopeOf func(schema.GroupResource) (namespaced, known bool, err error)) (Scoping, *news.Stop) {
	var lookupErr error
	scoping, err := ScopeGrants(objs, inst.Spec.ScopedGrants.Namespaces, func(gr schema.GroupResource) (bool, bool) {
		namespaced, known, err := scopeOf(gr)
		if err != nil && lookupErr == nil {
			lookupErr = err
		}
		return namespaced, known
	})
	ref := fmt.Sprintf("%s %s", inst.Spec.Extension, version)
	switch {
	case lookupErr != nil:
		return Scoping{}, retry(v1alpha1.ReasonClusterUnavailable, fmt.Sprintf(
			"spec.scopedGrants: reading the scope of the resources %s grants from %s: %v", ref, fleet.ClusterName(inst.Spec.Cluster), lookupErr))
	case err != nil:
		return Scoping{}, terminal(v1alpha1.ReasonScopedGrantsRefused, fmt.Sprintf(
			"spec.scopedGrants: cannot narrow the grants of %s: %v; remove spec.scopedGrants, or install a version whose RBAC can be narrowed", ref, err))
	}
	return scoping, nil
}

// DenialMessage is the Ready condition's message when an approver denied
// change c of inst: who, why, and how to go on.
func DenialMessage(inst *v1alpha1.ExtensionInstallation, c *Pending, a *v1alpha1.ChangeApproval) string {
	why := ""
	if a.DenialReason != "" {
		why = ": " + a.DenialReason
	}
	return fmt.Sprintf("%s denied %s %s (digest %s)%s; nothing of it was applied; change spec.version or spec.values to request another change, or delete the denying Approval to have it reviewed again",
		a.DeniedBy, inst.Spec.Extension, c.what(), c.Digest, why)
}

// WaitMessage is the Ready condition's message while change c of inst
// waits for approval: what it is, why it needs approval, and what to run.
func WaitMessage(inst *v1alpha1.ExtensionInstallation, c *Pending, a *v1alpha1.ChangeApproval) string {
	msg := fmt.Sprintf("%s %s needs approval (policy %s: %s); approve it with: annexctl approve %s -n %s --digest %s",
		inst.Spec.Extension, c.what(), strings.Join(a.Policies, ", "), strings.Join(a.Reasons, "; "), inst.Name, inst.Namespace, c.Digest)
	if len(a.Refused) > 0 {
		msg += "; refused: " + strings.Join(a.Refused, "; ")
	}
	return msg
}

// what names the change in a message: installing a version, or changing
// from one to another.
func (c *Pending) what() string {
	if c.From != "" {
		return fmt.Sprintf("changing %s → %s", c.From, c.To)
	}
	return "installing " + c.To
}

func terminal(reason, message string) *news.Stop {
	return &news.Stop{Kind: news.Terminal, Reason: reason, Message: message}
}
func retry(reason, message string) *news.Stop {
	return &news.Stop{Kind: news.Retry, Reason: reason, Message: message}
}
func wait(reason, message string) *news.Stop {
	return &news.Stop{Kind: news.Wait, Reason: reason, Message: message}
}
