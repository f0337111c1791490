package exampleoperator

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestShouting(t *testing.T) {
	for message, want := range map[string]bool{
		"DEPLOYS ARE FROZEN":   true,
		"STOP!":                true,
		"ÉTÉ":                  false, // three letters: an acronym
		"Deploys are frozen":   false,
		"API v2 is GA":         false, // lower-case letters
		"OK":                   false,
		"2026-11-27 12:00 UTC": false, // three letters
		"":                     false,
	} {
		if got := Shouting(message); got != want {
			t.Errorf("Shouting(%q) = %v, want %v", message, got, want)
		}
	}
}

// TestValidateBanner: a Banner written in capitals is refused at either
// version, naming the Banner, the version's field and a suggestion; an
// update that keeps such a message is allowed (the operator's finalizer,
// a Banner from before the webhook), one that writes it is not.
func TestValidateBanner(t *testing.T) {
	raw := func(apiVersion, field, message string) runtime.RawExtension {
		data, _ := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": "Banner", "spec": map[string]any{field: message}})
		return runtime.RawExtension{Raw: data}
	}
	request := func(version string, op admissionv1.Operation, obj, old runtime.RawExtension) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Kind: metav1.GroupVersionKind{Group: "example.annex.dev", Version: version, Kind: "Banner"}, Operation: op,
			Namespace: "default", Name: "freeze", Object: obj, OldObject: old,
		}}
	}
	cases := []struct {
		name    string
		req     admission.Request
		allowed bool
		message string
	}{
		{"sentence case", request("v1alpha1", admissionv1.Create, raw("example.annex.dev/v1alpha1", "message", "Deploys are frozen"), runtime.RawExtension{}), true, ""},
		{"capitals at v1alpha1", request("v1alpha1", admissionv1.Create, raw("example.annex.dev/v1alpha1", "message", "DEPLOYS ARE FROZEN"), runtime.RawExtension{}), false,
			`Banner default/freeze: spec.message "DEPLOYS ARE FROZEN" is written in capitals, and a banner does not shout; write it in sentence case, e.g. "Deploys are frozen"`},
		{"capitals at v1beta1", request("v1beta1", admissionv1.Create, raw("example.annex.dev/v1beta1", "text", "FROZEN!"), runtime.RawExtension{}), false,
			`Banner default/freeze: spec.text "FROZEN!" is written in capitals, and a banner does not shout; write it in sentence case, e.g. "Frozen!"`},
		{"an update keeping capitals", request("v1alpha1", admissionv1.Update, raw("example.annex.dev/v1alpha1", "message", "FROZEN"), raw("example.annex.dev/v1alpha1", "message", "FROZEN")), true, ""},
		{"an update writing capitals", request("v1alpha1", admissionv1.Update, raw("example.annex.dev/v1alpha1", "message", "FROZEN"), raw("example.annex.dev/v1alpha1", "message", "Frozen")), false,
			`Banner default/freeze: spec.message "FROZEN" is written in capitals, and a banner does not shout; write it in sentence case, e.g. "Frozen"`},
		{"an unknown version", request("v2", admissionv1.Create, raw("example.annex.dev/v2", "message", "Hi"), runtime.RawExtension{}), false,
			"this webhook validates Banners of example.annex.dev/v1alpha1 and example.annex.dev/v1beta1, not example.annex.dev/v2; check the webhook's rules"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := validateBanner(t.Context(), tc.req)
			got := ""
			if resp.Result != nil {
				got = resp.Result.Message
			}
			if resp.Allowed != tc.allowed || !tc.allowed && got != tc.message {
				t.Errorf("allowed %v, message %q; want %v, %q", resp.Allowed, got, tc.allowed, tc.message)
			}
		})
	}
}

// TestConvertBanner: spec.message at v1alpha1 is spec.text at v1beta1,
// both ways, everything else kept; unknown versions are refused, naming
// them.
func TestConvertBanner(t *testing.T) {
	alpha := map[string]any{
		"apiVersion": "example.annex.dev/v1alpha1", "kind": "Banner",
		"metadata": map[string]any{"name": "hello", "namespace": "default"},
		"spec":     map[string]any{"message": "Hello"},
		"status":   map[string]any{"configMapName": "hello-banner"},
	}
	beta := map[string]any{
		"apiVersion": "example.annex.dev/v1beta1", "kind": "Banner",
		"metadata": map[string]any{"name": "hello", "namespace": "default"},
		"spec":     map[string]any{"text": "Hello"},
		"status":   map[string]any{"configMapName": "hello-banner"},
	}
	for _, c := range []struct {
		from, want map[string]any
	}{{alpha, beta}, {beta, alpha}, {alpha, alpha}} {
		got, err := ConvertBanner(c.from, c.want["apiVersion"].(string))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ConvertBanner(%v → %s) = %v, %v; want %v", c.from, c.want["apiVersion"], got, err, c.want)
		}
	}
	if _, err := ConvertBanner(alpha, "example.annex.dev/v2"); err == nil || !strings.Contains(err.Error(), `"example.annex.dev/v2"`) {
		t.Errorf("converting to v2: %v, want an error naming it", err)
	}
	if alpha["spec"].(map[string]any)["message"] != "Hello" {
		t.Error("ConvertBanner changed its input")
	}
}

// TestConversionHandler: a ConversionReview is answered with the objects
// converted, in order, and the request's UID; an object it cannot convert
// fails the whole review with the reason.
func TestConversionHandler(t *testing.T) {
	review := func(desired string, objs ...string) *apiextensionsv1.ConversionReview {
		t.Helper()
		req := &apiextensionsv1.ConversionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
			Request:  &apiextensionsv1.ConversionRequest{UID: "42", DesiredAPIVersion: desired},
		}
		for _, o := range objs {
			req.Request.Objects = append(req.Request.Objects, runtime.RawExtension{Raw: []byte(o)})
		}
		body, _ := json.Marshal(req)
		rec := httptest.NewRecorder()
		conversionHandler{}.ServeHTTP(rec, httptest.NewRequest("POST", ConversionPath, bytes.NewReader(body)))
		out := &apiextensionsv1.ConversionReview{}
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil || out.Response == nil {
			t.Fatalf("response %q: %v", rec.Body.String(), err)
		}
		return out
	}
	ok := review("example.annex.dev/v1beta1",
		`{"apiVersion":"example.annex.dev/v1alpha1","kind":"Banner","spec":{"message":"a"}}`,
		`{"apiVersion":"example.annex.dev/v1alpha1","kind":"Banner","spec":{"message":"b"}}`)
	if ok.Response.UID != "42" || ok.Response.Result.Status != metav1.StatusSuccess || len(ok.Response.ConvertedObjects) != 2 ||
		string(ok.Response.ConvertedObjects[1].Raw) != `{"apiVersion":"example.annex.dev/v1beta1","kind":"Banner","spec":{"text":"b"}}` {
		t.Errorf("response %+v", ok.Response)
	}
	bad := review("example.annex.dev/v1beta1", `{"apiVersion":"example.annex.dev/v0","kind":"Banner"}`)
	if bad.Response.Result.Status != metav1.StatusFailure || !strings.Contains(bad.Response.Result.Message, `from "example.annex.dev/v0"`) || len(bad.Response.ConvertedObjects) != 0 {
		t.Errorf("response %+v, want a failure naming v0", bad.Response)
	}
}
