package cli

import (
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// InstallationDetail is one installation in full: what the console's
// installation page shows.
type InstallationDetail struct {
	// Status is the installation's node of the status tree: versions,
	// readiness, progress, dependencies and the action a person can take.
	Status InstallationStatus `json:"status"`
	// Cluster is the ManagedCluster, or HubCluster.
	Cluster         string `json:"cluster"`
	TargetNamespace string `json:"targetNamespace,omitempty"`
	// RequestedBy is the user who last changed the spec.
	RequestedBy string `json:"requestedBy,omitempty"`
	// Values is spec.values as YAML ("" when none).
	Values     string             `json:"values,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Plans are the plans of a package, down to their steps.
	Plans []v1alpha1.PlanStatus `json:"plans,omitempty"`
	// Pending is the revision being applied, when one is.
	Pending *v1alpha1.Revision `json:"pending,omitempty"`
	// Change is the change the gates hold, when one is.
	Change *v1alpha1.PendingChange `json:"change,omitempty"`
	// CRDChanges is what the CRD comparison of the last change found.
	CRDChanges  *v1alpha1.CRDChangeReport   `json:"crdChanges,omitempty"`
	Permissions *v1alpha1.PermissionSummary `json:"permissions,omitempty"`
	// Inventory is every object of the installed revision with its
	// health; InventoryNote says why health is not shown.
	Inventory     []ObjectHealth `json:"inventory,omitempty"`
	InventoryNote string         `json:"inventoryNote,omitempty"`
	// History is the recent revisions, newest first.
	History []v1alpha1.Revision `json:"history,omitempty"`
	// DriftDetection is the mode; Drifted what the last check found.
	DriftDetection v1alpha1.DriftDetectionMode `json:"driftDetection,omitempty"`
	Drifted        []v1alpha1.DriftedObject    `json:"drifted,omitempty"`
	FailedTarget   *v1alpha1.FailedTarget      `json:"failedTarget,omitempty"`
	// Events are the installation's events, newest first; EventsError
	// says why they cannot be read (RBAC on events.k8s.io).
	Events      []Event `json:"events,omitempty"`
	EventsError string  `json:"eventsError,omitempty"`
	Created     time.Time
}

// ObjectHealth is one inventory object and its kstatus health.
type ObjectHealth struct {
	Ref v1alpha1.ObjectReference `json:"ref"`
	// Status is Current, InProgress, Failed, Terminating, NotFound or
	// Unknown; "" when health was not read.
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// HealthFunc reads the health of inventory objects on the hub, as the
// caller: the objects that are not Current, with their status and
// message (apply.Applier.Health gives them). Objects it does not return
// are Current.
type HealthFunc func(ctx context.Context, inventory []v1alpha1.ObjectReference) ([]ObjectHealth, error)

// Describe reads one installation in full: the status tree's three
// LISTs (a cache-backed reader serves them), one LIST of events in its
// namespace, and, for an installation on the hub, the health of its
// inventory through health (one GET per object). A managed cluster's
// objects are not read: the caller's kubeconfig reaches the hub only.
// Errors: the installation does not exist (naming it), or a LIST fails.
func Describe(ctx context.Context, c client.Reader, health HealthFunc, namespace, name string) (*InstallationDetail, error) {
	inst := &v1alpha1.ExtensionInstallation{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, inst); err != nil {
		return nil, installationError(namespace, name, err)
	}
	tree, err := Status(ctx, c, StatusFilter{Namespace: namespace, Name: name})
	if err != nil {
		return nil, err
	}
	d := DetailOfInstallation(inst, tree)
	if events, err := Events(ctx, c, EventFilter{Namespace: namespace, Installation: name}); err != nil {
		d.EventsError = err.Error()
	} else {
		sort.SliceStable(events, func(i, j int) bool { return events[i].Time.After(events[j].Time) })
		d.Events = events
	}
	switch {
	case len(inst.Status.Inventory) == 0:
	case inst.Spec.Cluster != "":
		d.InventoryNote = fmt.Sprintf("the objects are on cluster %s; the console reads the hub only, with your kubeconfig", inst.Spec.Cluster)
	case health == nil:
		d.InventoryNote = "health not read"
	default:
		pending, err := health(ctx, inst.Status.Inventory)
		if err != nil {
			d.InventoryNote = "reading the objects' health: " + err.Error()
			break
		}
		byRef := make(map[v1alpha1.ObjectReference]ObjectHealth, len(pending))
		for _, p := range pending {
			byRef[p.Ref] = p
		}
		for i := range d.Inventory {
			if p, ok := byRef[d.Inventory[i].Ref]; ok {
				d.Inventory[i] = p
			} else {
				d.Inventory[i].Status = "Current"
			}
		}
	}
	return d, nil
}

// DetailOfInstallation is the detail of an installation already read,
// with its node from tree (which must list it); pure. Inventory health
// and events are left empty.
func DetailOfInstallation(inst *v1alpha1.ExtensionInstallation, tree *StatusTree) *InstallationDetail {
	d := &InstallationDetail{
		Cluster: inst.Spec.Cluster, TargetNamespace: inst.Spec.TargetNamespace,
		RequestedBy: inst.Annotations[v1alpha1.AnnotationRequestedBy],
		Conditions:  inst.Status.Conditions, Plans: inst.Status.Plans, Pending: inst.Status.Pending,
		Change: inst.Status.Change, CRDChanges: inst.Status.CRDChanges, Permissions: inst.Status.Permissions, History: inst.Status.History,
		DriftDetection: inst.Spec.DriftDetection, Drifted: inst.Status.Drifted, Created: inst.CreationTimestamp.Time,
	}
	if d.Cluster == "" {
		d.Cluster = HubCluster
	}
	if ft := inst.Status.FailedTarget; ft != nil && ft.Generation == inst.Generation {
		d.FailedTarget = ft
	}
	for _, cs := range tree.Clusters {
		for _, n := range cs.Installations {
			if n.Namespace == inst.Namespace && n.Name == inst.Name {
				d.Status = n
			}
		}
	}
	if v := inst.Spec.Values; v != nil && len(v.Raw) > 0 && string(v.Raw) != "{}" {
		if y, err := yaml.JSONToYAML(v.Raw); err == nil {
			d.Values = string(y)
		}
	}
	for _, ref := range inst.Status.Inventory {
		d.Inventory = append(d.Inventory, ObjectHealth{Ref: ref})
	}
	return d
}

// ApprovalRequest is a change that waits for an Approval, as an approver
// reviews it.
type ApprovalRequest struct {
	Namespace, Name, Extension string
	// Cluster is the ManagedCluster, or HubCluster.
	Cluster string
	// Event is PreInstall or PreUpgrade; FromVersion is "" for an install.
	Event, FromVersion, ToVersion string
	// Digest identifies exactly the change an Approval approves.
	Digest string
	// ArtifactDigest is the artifact the change applies; SignedBy who
	// signed it ("" when no signature policy applies).
	ArtifactDigest, SignedBy string
	// PermissionsGrow and PermissionsShrink are the permission diff.
	PermissionsGrow, PermissionsShrink []string
	CRDChanges                         []string
	// Reasons and Policies say why approval is required.
	Reasons, Policies []string
	RequestedBy       string
	// Refused are Approvals of the digest that do not count, and why.
	Refused []string
	// Since is when the installation last changed its Ready condition.
	Since time.Time
}

// ApprovalRequests lists the changes of installations in namespace (""
// for every namespace) that wait for an Approval, oldest first: one
// LIST (a cache-backed reader serves it).
func ApprovalRequests(ctx context.Context, c client.Reader, namespace string) ([]ApprovalRequest, error) {
	var list v1alpha1.ExtensionInstallationList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing ExtensionInstallations: %w", err)
	}
	return ApprovalRequestsOf(list.Items), nil
}

// ApprovalRequestsOf keeps the installations whose change waits for an
// Approval, oldest first (ties by namespace/name); pure.
func ApprovalRequestsOf(insts []v1alpha1.ExtensionInstallation) []ApprovalRequest {
	out := []ApprovalRequest{}
	for i := range insts {
		in := &insts[i]
		pc := in.Status.Change
		if pc == nil || pc.Approval == nil || pc.Approval.State != v1alpha1.ApprovalPending {
			continue
		}
		a := pc.Approval
		r := ApprovalRequest{
			Namespace: in.Namespace, Name: in.Name, Extension: in.Spec.Extension, Cluster: in.Spec.Cluster,
			Event: pc.Event, FromVersion: pc.FromVersion, ToVersion: pc.ToVersion, Digest: pc.Digest,
			ArtifactDigest: pc.ArtifactDigest, SignedBy: pc.SignedBy,
			PermissionsGrow: pc.PermissionsGrow, PermissionsShrink: pc.PermissionsShrink, CRDChanges: a.CRDChanges,
			Reasons: a.Reasons, Policies: a.Policies, RequestedBy: a.RequestedBy, Refused: a.Refused,
			Since: in.CreationTimestamp.Time,
		}
		if r.Cluster == "" {
			r.Cluster = HubCluster
		}
		for _, c := range in.Status.Conditions {
			if c.Type == v1alpha1.ConditionReady {
				r.Since = c.LastTransitionTime.Time
			}
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out
}
