package apply

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// webhookKinds are the admission webhook configurations and APIServices:
// applied after everything else, deleted before anything else, so that a
// webhook never admits requests, and an aggregated API is never
// discovered, while its server is absent (an APIService that does not
// answer makes discovery fail for every client of the cluster).
var webhookKinds = map[schema.GroupKind]bool{
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:   true,
	apiServiceGroupKind: true,
}

var apiServiceGroupKind = schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"}

// checkWebhooks marks as pending, in h, each object among objs (live
// objects of the inventory, nil for absent ones) that has the API server
// call a Service without a ready endpoint — a webhook configuration, a
// CRD converted by a webhook, an APIService: its server is not serving,
// and every request it intercepts fails (or is let through, with
// failurePolicy Ignore), every object stored at another version cannot
// be read, its API cannot be discovered — and each APIService whose
// Available condition is False (its server answers, but not as an
// aggregated API server must). It
// reads the Services' EndpointSlices, only when objs hold such objects.
// Read errors leave h as it is: the health is a report, and the next
// pass reads again. An apply checks no CRDs (conversions false): a
// plan applies a CRD before the Deployment that serves its conversion,
// and that step must not wait for it.
func (a *Applier) checkWebhooks(ctx context.Context, h *Health, objs []*unstructured.Unstructured, conversions bool) {
	for _, obj := range objs {
		if obj == nil || obj.GetDeletionTimestamp() != nil || !conversions && obj.GroupVersionKind().GroupKind() == crdGroupKind {
			continue
		}
		var problems []string
		for _, svc := range webhookServices(obj) {
			ready, err := a.serviceReady(ctx, svc.namespace, svc.name)
			if err != nil || ready {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s: Service %s/%s has no ready endpoint, so its server does not answer and %s; see why the Service's pods are not ready",
				svc.what, svc.namespace, svc.name, svc.effect))
		}
		if msg := apiServiceUnavailable(obj); msg != "" && len(problems) == 0 {
			problems = append(problems, msg)
		}
		if msg := caBundleAwaited(obj); msg != "" {
			problems = append(problems, msg)
		}
		if len(problems) == 0 {
			continue
		}
		h.Pending = append(h.Pending, ObjectStatus{Ref: refOf(obj), Status: string(status.InProgressStatus), Message: strings.Join(problems, "; ")})
		h.Ready = false
	}
}

// webhookService is a Service the API server calls for an object.
type webhookService struct {
	what, effect    string
	namespace, name string
}

// webhookServices returns the Services obj has the API server call: each
// webhook of a webhook configuration, a CRD's conversion webhook, an
// APIService's server. Webhooks called by URL are left out: nothing in
// the cluster says whether they answer.
func webhookServices(obj *unstructured.Unstructured) []webhookService {
	gk := obj.GroupVersionKind().GroupKind()
	var out []webhookService
	switch {
	case gk == apiServiceGroupKind:
		ns, _, _ := unstructured.NestedString(obj.Object, "spec", "service", "namespace")
		name, _, _ := unstructured.NestedString(obj.Object, "spec", "service", "name")
		if name != "" {
			group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
			version, _, _ := unstructured.NestedString(obj.Object, "spec", "version")
			out = append(out, webhookService{what: "APIService " + obj.GetName(),
				effect: fmt.Sprintf("%s/%s cannot be served or discovered", group, version), namespace: ns, name: name})
		}
	case webhookKinds[gk]:
		hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
		for _, hook := range hooks {
			m, _ := hook.(map[string]any)
			ns, _, _ := unstructured.NestedString(m, "clientConfig", "service", "namespace")
			name, _, _ := unstructured.NestedString(m, "clientConfig", "service", "name")
			hookName, _ := m["name"].(string)
			if name != "" {
				out = append(out, webhookService{what: "webhook " + hookName, effect: "the requests it intercepts fail", namespace: ns, name: name})
			}
		}
	case gk == crdGroupKind:
		if strategy, _, _ := unstructured.NestedString(obj.Object, "spec", "conversion", "strategy"); strategy != "Webhook" {
			return nil
		}
		ns, _, _ := unstructured.NestedString(obj.Object, "spec", "conversion", "webhook", "clientConfig", "service", "namespace")
		name, _, _ := unstructured.NestedString(obj.Object, "spec", "conversion", "webhook", "clientConfig", "service", "name")
		if name != "" {
			out = append(out, webhookService{what: "conversion webhook", effect: "objects cannot be read or written at a version other than the stored one", namespace: ns, name: name})
		}
	}
	return out
}

// apiServiceUnavailable says why obj, an APIService with a Service, is
// not Available, from its Available condition; "" when it is, when the
// API server has not judged it yet, or when obj is anything else.
func apiServiceUnavailable(obj *unstructured.Unstructured) string {
	if obj.GroupVersionKind().GroupKind() != apiServiceGroupKind {
		return ""
	}
	if svc, _, _ := unstructured.NestedString(obj.Object, "spec", "service", "name"); svc == "" {
		return "" // served by the API server itself
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] != "Available" || m["status"] != "False" {
			continue
		}
		reason, _ := m["reason"].(string)
		message, _ := m["message"].(string)
		return fmt.Sprintf("APIService %s is not Available (%s: %s); see the aggregated API server's logs", obj.GetName(), reason, message)
	}
	return ""
}

// annotationInjectCAFrom asks cert-manager's CA injector to write the CA
// of the named Certificate (namespace/name) into an object's caBundle
// fields: webhook configurations, CRDs with a conversion webhook,
// APIServices.
const annotationInjectCAFrom = "cert-manager.io/inject-ca-from"

// caBundleAwaited says which caBundle of obj is still empty although obj
// asks cert-manager to inject it (annotationInjectCAFrom): until the
// injector writes it, the API server cannot verify the server's
// certificate, and every call fails as when the server is absent. ""
// when obj asks for no injection or every caBundle it needs is set.
func caBundleAwaited(obj *unstructured.Unstructured) string {
	from := obj.GetAnnotations()[annotationInjectCAFrom]
	if from == "" {
		return ""
	}
	var empty []string
	switch gk := obj.GroupVersionKind().GroupKind(); {
	case gk == apiServiceGroupKind:
		if ca, _, _ := unstructured.NestedString(obj.Object, "spec", "caBundle"); ca == "" {
			empty = append(empty, "spec.caBundle")
		}
	case webhookKinds[gk]:
		hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
		for i, hook := range hooks {
			m, _ := hook.(map[string]any)
			if ca, _, _ := unstructured.NestedString(m, "clientConfig", "caBundle"); ca == "" {
				empty = append(empty, fmt.Sprintf("webhooks[%d].clientConfig.caBundle", i))
			}
		}
	case gk == crdGroupKind:
		if strategy, _, _ := unstructured.NestedString(obj.Object, "spec", "conversion", "strategy"); strategy != "Webhook" {
			return ""
		}
		if ca, _, _ := unstructured.NestedString(obj.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle"); ca == "" {
			empty = append(empty, "spec.conversion.webhook.clientConfig.caBundle")
		}
	}
	if len(empty) == 0 {
		return ""
	}
	return fmt.Sprintf("%s %s waits for cert-manager to inject the CA of Certificate %s (%s: %s is empty), so the API server cannot trust its server yet; check that cert-manager's cainjector runs and that the Certificate is Ready",
		obj.GetKind(), obj.GetName(), from, annotationInjectCAFrom, strings.Join(empty, ", "))
}

// serviceReady reports whether an EndpointSlice of Service ns/name has a
// ready endpoint.
func (a *Applier) serviceReady(ctx context.Context, ns, name string) (bool, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("discovery.k8s.io/v1")
	list.SetKind("EndpointSliceList")
	if err := a.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"kubernetes.io/service-name": name}); err != nil {
		return false, err
	}
	for _, slice := range list.Items {
		endpoints, _, _ := unstructured.NestedSlice(slice.Object, "endpoints")
		for _, ep := range endpoints {
			m, _ := ep.(map[string]any)
			if ready, found, _ := unstructured.NestedBool(m, "conditions", "ready"); !found || ready {
				return true, nil
			}
		}
	}
	return false, nil
}

// isWorkload reports whether ref is a workload whose Pods outlive its
// deletion for a while: a Deployment, StatefulSet, DaemonSet, ReplicaSet
// or Job.
func isWorkload(ref v1alpha1.ObjectReference) bool {
	switch ref.Group {
	case "apps":
		return ref.Kind == "Deployment" || ref.Kind == "StatefulSet" || ref.Kind == "DaemonSet" || ref.Kind == "ReplicaSet"
	case "batch":
		return ref.Kind == "Job"
	}
	return false
}

// workloadPods returns how many Pods of the workloads of inventory still
// exist: Pods whose owner is one of them, or, for a Deployment, one of
// its ReplicaSets (<deployment>-<hash>). The garbage collector deletes
// them after their workload is gone, and they keep running until they
// have stopped; their ServiceAccount's RBAC stays until then, so that an
// operator shutting down is not refused its own Lease. A Pod that has
// finished (the server leaves it out of the list), or whose grace period
// ended more than podStopSlack ago (its node is gone, say), is not waited
// for. Only the Pods' metadata is listed: a namespace of many Pods costs
// their metadata, not their specs and statuses.
func (a *Applier) workloadPods(ctx context.Context, inventory []v1alpha1.ObjectReference) (int, error) {
	byNamespace := map[string][]v1alpha1.ObjectReference{}
	for _, ref := range inventory {
		if isWorkload(ref) {
			byNamespace[ref.Namespace] = append(byNamespace[ref.Namespace], ref)
		}
	}
	n, now := 0, time.Now()
	for ns, workloads := range byNamespace {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := a.Client.List(ctx, list, client.InNamespace(ns), client.MatchingFieldsSelector{Selector: unfinished}); err != nil {
			return 0, err
		}
		for _, pod := range list.Items {
			if ownedByAny(pod.OwnerReferences, workloads) && stillRunning(pod.DeletionTimestamp, now) {
				n++
			}
		}
	}
	return n, nil
}

// unfinished selects the Pods that have not finished.
var unfinished = fields.AndSelectors(
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)))

// podStopSlack is how long after the end of its grace period a Pod being
// deleted is still waited for.
const podStopSlack = time.Minute

// stillRunning reports whether an unfinished Pod deleted at deleted (nil:
// not deleted) may still run at now: it is not being deleted, or its grace
// period (which metadata.deletionTimestamp ends) ended less than
// podStopSlack ago.
func stillRunning(deleted *metav1.Time, now time.Time) bool {
	return deleted == nil || now.Before(deleted.Add(podStopSlack))
}

// ownedByAny reports whether owners name one of workloads, or a
// ReplicaSet of one of the Deployments among them.
func ownedByAny(owners []metav1.OwnerReference, workloads []v1alpha1.ObjectReference) bool {
	for _, o := range owners {
		for _, w := range workloads {
			if o.Kind == w.Kind && o.Name == w.Name ||
				w.Kind == "Deployment" && o.Kind == "ReplicaSet" && strings.HasPrefix(o.Name, w.Name+"-") {
				return true
			}
		}
	}
	return false
}
