package exampleoperator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"unicode"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// From version 0.4.0 the operator serves two webhooks (its bundle
// declares them in spec.webhookdefinitions; Annex registers them and
// issues their certificate):
//
//   - ValidatingPath, a validating admission webhook on Banners: a Banner
//     whose message is written in capitals (more than three letters, none
//     lower case) is refused — a banner does not shout — with a message
//     naming the Banner, the field and what to write instead. An update
//     that leaves the message as it was is allowed, so that a Banner
//     created before the webhook existed can still get its finalizer and
//     be deleted.
//   - ConversionPath, the conversion webhook of the CRD's two versions:
//     v1alpha1 (the storage version) has spec.message, v1beta1 calls the
//     same text spec.text; everything else is the same.
const (
	ValidatingPath = "/validate-banner"
	ConversionPath = "/convert"
	// WebhookPort is the port the webhook server listens on in a Pod (the
	// bundle's containerPort).
	WebhookPort = 9443
	// WebhookCertDir is where it reads tls.crt and tls.key in a Pod:
	// where Annex, as OLM, mounts the serving certificate.
	WebhookCertDir = "/tmp/k8s-webhook-server/serving-certs"
)

// The versions of Banner's API and where each keeps the message.
var messageField = map[string][]string{
	"example.annex.dev/v1alpha1": {"spec", "message"},
	"example.annex.dev/v1beta1":  {"spec", "text"},
}

// Shouting reports whether message is written in capitals: more than
// three letters, none of them lower case.
func Shouting(message string) bool {
	letters, lower := 0, false
	for _, r := range message {
		if unicode.IsLetter(r) {
			letters++
			lower = lower || unicode.IsLower(r)
		}
	}
	return letters > 3 && !lower
}

// validateBanner is the validating webhook's handler.
func validateBanner(_ context.Context, req admission.Request) admission.Response {
	apiVersion := req.Kind.Group + "/" + req.Kind.Version
	field, ok := messageField[apiVersion]
	if !ok {
		return admission.Denied(fmt.Sprintf("this webhook validates Banners of %s and %s, not %s; check the webhook's rules",
			"example.annex.dev/v1alpha1", "example.annex.dev/v1beta1", apiVersion))
	}
	message, err := fieldOf(req.Object.Raw, field)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if req.OldObject.Raw != nil {
		if old, err := fieldOf(req.OldObject.Raw, field); err == nil && old == message {
			return admission.Allowed("")
		}
	}
	if !Shouting(message) {
		return admission.Allowed("")
	}
	return admission.Denied(fmt.Sprintf("Banner %s/%s: %s.%s %q is written in capitals, and a banner does not shout; write it in sentence case, e.g. %q",
		req.Namespace, req.Name, field[0], field[1], message, sentenceCase(message)))
}

func fieldOf(raw []byte, field []string) (string, error) {
	obj := map[string]any{}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("the request's object is not JSON: %w", err)
	}
	s, _, _ := unstructured.NestedString(obj, field...)
	return s, nil
}

// sentenceCase lowers every letter but the first.
func sentenceCase(s string) string {
	out := []rune(s)
	first := true
	for i, r := range out {
		if !unicode.IsLetter(r) {
			continue
		}
		if !first {
			out[i] = unicode.ToLower(r)
		}
		first = false
	}
	return string(out)
}

// ConvertBanner returns obj (a Banner as JSON fields) at apiVersion: the
// message moves between spec.message (v1alpha1) and spec.text
// (v1beta1); nothing else changes. An error names the version it cannot
// convert from or to.
func ConvertBanner(obj map[string]any, apiVersion string) (map[string]any, error) {
	from, _ := obj["apiVersion"].(string)
	src, ok := messageField[from]
	if !ok {
		return nil, fmt.Errorf("cannot convert a Banner from %q: this operator knows example.annex.dev/v1alpha1 and v1beta1", from)
	}
	dst, ok := messageField[apiVersion]
	if !ok {
		return nil, fmt.Errorf("cannot convert a Banner to %q: this operator knows example.annex.dev/v1alpha1 and v1beta1", apiVersion)
	}
	out := runtime.DeepCopyJSON(obj)
	out["apiVersion"] = apiVersion
	if from == apiVersion {
		return out, nil
	}
	if message, found, _ := unstructured.NestedString(out, src...); found {
		unstructured.RemoveNestedField(out, src...)
		if err := unstructured.SetNestedField(out, message, dst...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// conversionHandler serves ConversionReviews of Banners.
type conversionHandler struct{}

func (conversionHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	review := &apiextensionsv1.ConversionReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, "the body is not a ConversionReview of apiextensions.k8s.io/v1", http.StatusBadRequest)
		return
	}
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		obj := map[string]any{}
		converted, err := map[string]any(nil), json.Unmarshal(raw.Raw, &obj)
		if err == nil {
			converted, err = ConvertBanner(obj, review.Request.DesiredAPIVersion)
		}
		if err != nil {
			resp.ConvertedObjects = nil
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
			break
		}
		data, err := json.Marshal(converted)
		if err != nil {
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
			resp.ConvertedObjects = nil
			break
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: data})
	}
	review.Response, review.Request = resp, nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}
