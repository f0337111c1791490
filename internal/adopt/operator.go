package adopt

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OLM v0's kinds an operator adoption reads and deletes.
var (
	SubscriptionGVK = schema.GroupVersionKind{Group: OLMGroup, Version: "v1alpha1", Kind: "Subscription"}
	CSVGVK          = schema.GroupVersionKind{Group: OLMGroup, Version: "v1alpha1", Kind: "ClusterServiceVersion"}
	InstallPlanGVK  = schema.GroupVersionKind{Group: OLMGroup, Version: "v1alpha1", Kind: "InstallPlan"}
)

// OLMGroup is OLM v0's API group.
const OLMGroup = "operators.coreos.com"

// The labels OLM v0 puts on what a CSV owns where an ownerReference
// cannot point (cluster-scoped objects, other namespaces); its own
// garbage collection follows them.
const (
	LabelOLMOwner          = "olm.owner"
	LabelOLMOwnerKind      = "olm.owner.kind"
	LabelOLMOwnerNamespace = "olm.owner.namespace"
)

// CSVSucceeded is the phase of a CSV whose operator is installed and
// running.
const CSVSucceeded = "Succeeded"

// Operator is an operator OLM v0 installed, as its Subscription and its
// installed ClusterServiceVersion say.
type Operator struct {
	// Subscription and Namespace name the Subscription; the operator runs
	// in Namespace.
	Subscription, Namespace string
	// Package, Channel and CatalogSource are the Subscription's spec.name,
	// spec.channel and spec.source.
	Package, Channel, CatalogSource string
	// CSV is status.installedCSV; Version its spec.version; Phase,
	// Reason and Message its status.
	CSV, Version, Phase, Reason, Message string
	// InstallPlans are the InstallPlans that installed the CSV.
	InstallPlans []string
	// WatchNamespaces are the namespaces OLM's operator group gave the
	// CSV (its annotation olm.targetNamespaces); none for all namespaces.
	WatchNamespaces []string
}

// OperatorOf reads an Operator from a Subscription and the CSV its
// status.installedCSV names (nil when that does not exist). An error
// says what is missing and what to do.
func OperatorOf(sub, csv *unstructured.Unstructured) (*Operator, error) {
	where := sub.GetNamespace() + "/" + sub.GetName()
	str := func(obj *unstructured.Unstructured, path ...string) string {
		s, _, _ := unstructured.NestedString(obj.Object, path...)
		return s
	}
	op := &Operator{
		Subscription: sub.GetName(), Namespace: sub.GetNamespace(),
		Package: str(sub, "spec", "name"), Channel: str(sub, "spec", "channel"), CatalogSource: str(sub, "spec", "source"),
		CSV: str(sub, "status", "installedCSV"),
	}
	if op.Package == "" {
		return nil, fmt.Errorf("Subscription %s has no spec.name (its package); it is not an OLM v0 Subscription Annex can adopt", where)
	}
	if op.CSV == "" {
		return nil, fmt.Errorf("Subscription %s has installed nothing yet (status.installedCSV is empty): wait until OLM installed it (or approve its InstallPlan), then adopt again", where)
	}
	if csv == nil {
		return nil, fmt.Errorf("Subscription %s names ClusterServiceVersion %s/%s in status.installedCSV, which does not exist: wait until OLM installed it, then adopt again", where, op.Namespace, op.CSV)
	}
	op.Version = str(csv, "spec", "version")
	op.Phase, op.Reason, op.Message = str(csv, "status", "phase"), str(csv, "status", "reason"), str(csv, "status", "message")
	if targets := csv.GetAnnotations()["olm.targetNamespaces"]; targets != "" {
		op.WatchNamespaces = strings.Split(targets, ",")
	}
	if p := str(sub, "status", "installPlanRef", "name"); p != "" {
		op.InstallPlans = append(op.InstallPlans, p)
	}
	return op, nil
}

// Installs reports whether the InstallPlan plan installed op's CSV: it
// lists it in spec.clusterServiceVersionNames.
func (op *Operator) Installs(plan *unstructured.Unstructured) bool {
	names, _, _ := unstructured.NestedStringSlice(plan.Object, "spec", "clusterServiceVersionNames")
	return slices.Contains(names, op.CSV)
}

// CheckOperator refuses to adopt op into inst: a CSV that is not
// Succeeded, a package other than inst's extension, a version other than
// the one inst pins. Each error says what to do.
func CheckOperator(op *Operator, inst Installation) error {
	csv := op.Namespace + "/" + op.CSV
	if op.Phase != CSVSucceeded {
		why := ""
		if op.Reason != "" || op.Message != "" {
			why = fmt.Sprintf(" (%s: %s)", op.Reason, op.Message)
		}
		return fmt.Errorf("ClusterServiceVersion %s of Subscription %s/%s is in phase %q%s, not Succeeded: only a running operator is adopted; fix it with OLM until its CSV is Succeeded, then adopt again",
			csv, op.Namespace, op.Subscription, op.Phase, why)
	}
	if op.Package != inst.Extension {
		return fmt.Errorf("Subscription %s/%s is of package %s, but spec.extension is %s: set spec.extension to %s",
			op.Namespace, op.Subscription, op.Package, inst.Extension, op.Package)
	}
	if !sameVersion(op.Version, inst.Version) {
		return fmt.Errorf("ClusterServiceVersion %s is version %s, but the installation resolved %s: set spec.version to %s, the version running, to adopt it; upgrade afterwards",
			csv, op.Version, inst.Version, op.Version)
	}
	if op.Namespace != inst.TargetNamespace {
		return fmt.Errorf("Subscription %s/%s is in namespace %s, but the installation's target namespace is %s: set spec.targetNamespace to %s",
			op.Namespace, op.Subscription, op.Namespace, inst.TargetNamespace, op.Namespace)
	}
	return nil
}

// OrphanPatch returns the JSON merge patch that makes obj no longer
// something OLM's garbage collection removes with the CSV csv of
// namespace ns: its ownerReferences to the CSV go, and so do OLM's
// olm.owner labels when they name it. The patch carries obj's
// resourceVersion as a precondition. ok is false when obj has neither.
func OrphanPatch(obj *unstructured.Unstructured, csv, ns string) (patch []byte, ok bool, err error) {
	refs := obj.GetOwnerReferences()
	kept := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool {
		return r.Kind == CSVGVK.Kind && strings.HasPrefix(r.APIVersion, OLMGroup+"/") && r.Name == csv
	})
	meta := map[string]any{}
	if len(kept) != len(refs) {
		if len(kept) == 0 {
			meta["ownerReferences"] = nil
		} else {
			meta["ownerReferences"] = kept
		}
	}
	labels := obj.GetLabels()
	if labels[LabelOLMOwner] == csv && (labels[LabelOLMOwnerNamespace] == "" || labels[LabelOLMOwnerNamespace] == ns) {
		drop := map[string]any{}
		for _, k := range []string{LabelOLMOwner, LabelOLMOwnerKind, LabelOLMOwnerNamespace} {
			if _, set := labels[k]; set {
				drop[k] = nil
			}
		}
		meta["labels"] = drop
	}
	if len(meta) == 0 {
		return nil, false, nil
	}
	meta["resourceVersion"] = obj.GetResourceVersion()
	patch, err = json.Marshal(map[string]any{"metadata": meta})
	return patch, err == nil, err
}
