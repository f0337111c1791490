package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/preflight"
	"github.com/annex-platform/annex/internal/resolve"
)

// ResolutionView is what `annexctl resolve -o yaml|json` prints: the versions and
// install order Annex would choose for a cluster, what cannot be
// satisfied, and the changes a gate holds.
type ResolutionView struct {
	// Cluster is the ManagedCluster, or HubCluster.
	Cluster string `json:"cluster"`
	// KubeVersion is the version planned for; ObservedVersion the one the
	// cluster runs (they differ for a hypothetical resolution).
	KubeVersion     string `json:"kubeVersion"`
	ObservedVersion string `json:"observedVersion,omitempty"`
	// Set are the hypothetical ranges (--set extension=range).
	Set []string `json:"set,omitempty"`
	// Steps in install order, dependencies first.
	Steps []ResolutionStep `json:"steps"`
	// Unsatisfiable maps installations to why they cannot be satisfied.
	Unsatisfiable []Unsatisfiable `json:"unsatisfiable,omitempty"`
	// Held are the changes a gate holds (status.change).
	Held []HeldChange `json:"held,omitempty"`
}

// ResolutionStep is one extension (or instance) in install order.
type ResolutionStep struct {
	Order     int    `json:"order"`
	Extension string `json:"extension"`
	Version   string `json:"version"`
	Installed string `json:"installed,omitempty"`
	// Change is install, upgrade, downgrade, none or "keep (pinned)".
	Change string `json:"change"`
	// For are the installations that request it; RequiredBy, for an
	// added dependency, the versions that need it.
	For        []string `json:"for,omitempty"`
	RequiredBy []string `json:"requiredBy,omitempty"`
	// Instance is set when the step serves one installation alone.
	Instance string `json:"instance,omitempty"`
}

// Unsatisfiable is an installation no version fits, and why.
type Unsatisfiable struct {
	Installation string `json:"installation"`
	Reason       string `json:"reason,omitempty"`
	Message      string `json:"message"`
}

// HeldChange is a change that waits at a gate.
type HeldChange struct {
	Installation      string   `json:"installation"`
	Extension         string   `json:"extension"`
	From              string   `json:"from,omitempty"`
	To                string   `json:"to"`
	Event             string   `json:"event"`
	Digest            string   `json:"digest"`
	Reason            string   `json:"reason,omitempty"`
	PermissionsGrow   []string `json:"permissionsGrow,omitempty"`
	PermissionsShrink []string `json:"permissionsShrink,omitempty"`
}

func resolutionViewOf(o ResolveOptions, r *solved) *ResolutionView {
	v := &ResolutionView{Cluster: o.Cluster, KubeVersion: r.kubeVersion, ObservedVersion: r.observed, Set: o.Set, Steps: []ResolutionStep{}}
	if v.Cluster == "" {
		v.Cluster = HubCluster
	}
	installed := map[string]string{}
	requested := map[string][]string{}
	for _, inst := range r.problem.Installations {
		key := inst.Extension
		if _, apart := r.resolution.Selected[resolve.InstanceKey(inst.Extension, inst.Name)]; apart {
			key = resolve.InstanceKey(inst.Extension, inst.Name)
		}
		if inst.Installed != "" {
			installed[key] = inst.Installed
		}
		requested[key] = append(requested[key], inst.Name)
	}
	for i, key := range r.resolution.InstallOrder {
		sel := r.resolution.Selected[key]
		step := ResolutionStep{Order: i + 1, Extension: sel.Extension, Version: sel.Version.Version, Installed: installed[key],
			Change: change(installed[key], sel), For: requested[key], Instance: sel.Instance}
		if len(step.For) == 0 {
			step.RequiredBy = sel.RequiredBy
		}
		v.Steps = append(v.Steps, step)
	}
	for name, ex := range r.resolution.Failed {
		v.Unsatisfiable = append(v.Unsatisfiable, Unsatisfiable{Installation: name, Reason: ex.Reason, Message: ex.Message})
	}
	sort.Slice(v.Unsatisfiable, func(i, j int) bool { return v.Unsatisfiable[i].Installation < v.Unsatisfiable[j].Installation })
	for _, inst := range r.installations {
		pc := inst.Status.Change
		if pc == nil {
			continue
		}
		h := HeldChange{Installation: nameOfInstallation(inst), Extension: inst.Spec.Extension, From: pc.FromVersion, To: pc.ToVersion,
			Event: pc.Event, Digest: pc.Digest, PermissionsGrow: pc.PermissionsGrow, PermissionsShrink: pc.PermissionsShrink}
		if ready := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady); ready != nil && ready.Status != metav1.ConditionTrue {
			h.Reason = ready.Reason
		}
		v.Held = append(v.Held, h)
	}
	sort.Slice(v.Held, func(i, j int) bool { return v.Held[i].Installation < v.Held[j].Installation })
	return v
}

// PreflightView is what `annexctl preflight -o yaml|json` prints.
type PreflightView struct {
	// Resolution is what annexctl resolve would print for the target
	// version; its key stays "plan", the name of that command before.
	Resolution *ResolutionView `json:"plan"`
	// Removed are installed objects whose API version the target
	// Kubernetes version no longer serves.
	Removed []RemovedAPIObject `json:"removed,omitempty"`
	// CRDChanges are the changes whose CRDs the installation controller
	// refused (spec.upgrade.crdPolicy) or let through with findings.
	CRDChanges []CRDChangeView `json:"crdChanges,omitempty"`
	// OK is false when an installation has no version for the target or
	// an object of a removed API version.
	OK bool `json:"ok"`
}

// RemovedAPIObject is one installed object of a removed API version.
type RemovedAPIObject struct {
	Installation string `json:"installation"`
	Object       string `json:"object"`
	APIVersion   string `json:"apiVersion"`
	RemovedIn    string `json:"removedIn"`
	Use          string `json:"use"`
}

// PreflightData is Preflight's result as data. Unlike Preflight it
// returns no error for problems found: OK says.
func PreflightData(ctx context.Context, c client.Reader, observe VersionObserver, o PreflightOptions) (*PreflightView, error) {
	if o.KubeVersion == "" {
		return nil, Usagef("--kube-version is required: the version the cluster is going to run")
	}
	po := ResolveOptions{Cluster: o.Cluster, KubeVersion: o.KubeVersion}
	r, err := solve(ctx, c, observe, po)
	if err != nil {
		return nil, err
	}
	report := preflight.Report{KubeVersion: o.KubeVersion, Problem: r.problem, Resolution: r.resolution}
	if report.Removed, err = preflight.RemovedObjects(o.KubeVersion, r.installations); err != nil {
		return nil, fmt.Errorf("--kube-version: %w", err)
	}
	v := &PreflightView{Resolution: resolutionViewOf(po, r), OK: report.OK(), CRDChanges: crdChangesOf(r.installations)}
	for _, f := range report.Removed {
		name := f.Object.Name
		if f.Object.Namespace != "" {
			name = f.Object.Namespace + "/" + name
		}
		v.Removed = append(v.Removed, RemovedAPIObject{Installation: f.Installation, Object: strings.TrimSpace(f.Object.Kind + " " + name),
			APIVersion: preflight.APIVersion(f.Object), RemovedIn: f.Removal.RemovedIn, Use: f.Removal.Use})
	}
	return v, nil
}
