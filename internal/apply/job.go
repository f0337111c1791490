package apply

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A Job's pod template and a few other fields of its spec cannot change
// once it exists, so Annex replaces a Job whose new version changes them
// (KUDO #586, #1425: there a re-applied Job failed "field is immutable"
// forever).

// jobReplaceTimeout bounds the wait for a replaced Job to be gone.
const jobReplaceTimeout = 30 * time.Second

var jobGroupKind = schema.GroupKind{Group: "batch", Kind: "Job"}

// immutableJobFields are the fields of a Job's spec that the API server
// refuses to change (batch validation ValidateJobSpecUpdate). completions
// may change in an Indexed Job; changedJobFields allows for that.
var immutableJobFields = []string{
	"template", "selector", "completions", "completionMode", "podFailurePolicy",
	"backoffLimitPerIndex", "managedBy", "successPolicy",
}

// generatedJobLabels are the labels the API server adds to a Job's
// selector and pod template; they carry the Job's name and UID, so they
// differ between any two Jobs.
var generatedJobLabels = []string{
	"batch.kubernetes.io/controller-uid", "controller-uid", "batch.kubernetes.io/job-name", "job-name",
}

// mustReplaceJob reports whether live is a Job of owner that desired
// changes in a field the API server refuses to change, drift being
// drifted(desired, live). Only a Job of owner is ever replaced.
//
// drift is a comparison without the server, which cannot see its
// normalisation (a desired `cpu: 1` is "1" live) and would replace such a
// Job on every apply. So when drift touches an immutable field, desired is
// created in a server-side dry run, under another name, and the immutable
// fields of that answer, with all defaults and normalisation applied, are
// compared with live's (changedJobFields). Nothing is written. When the
// dry run fails (an admission webhook that refuses dry runs, say), the
// answer is false, and the apply that follows tells.
func (a *Applier) mustReplaceJob(ctx context.Context, owner Owner, desired, live *unstructured.Unstructured, drift []string) bool {
	if !isJobOf(owner, live) || !slices.ContainsFunc(drift, touchesImmutableJobField) {
		return false
	}
	dry := desired.DeepCopy()
	dry.SetName("")
	dry.SetGenerateName("annex-dry-run-")
	dry.SetResourceVersion("")
	if err := a.Client.Create(ctx, dry, client.DryRunAll, client.FieldOwner(fieldManagerDryRun)); err != nil {
		return false
	}
	return len(changedJobFields(dry, live)) > 0
}

// isJobOf reports whether obj is a Job labelled for owner.
func isJobOf(owner Owner, obj *unstructured.Unstructured) bool {
	return obj.GroupVersionKind().GroupKind() == jobGroupKind && installationOf(obj) == owner.String()
}

// fieldManagerDryRun names the manager of the dry-run create; nothing it
// does is stored.
const fieldManagerDryRun = "annex-dry-run"

// touchesImmutableJobField reports whether a path drifted returns lies in
// one of immutableJobFields.
func touchesImmutableJobField(path string) bool {
	for _, f := range immutableJobFields {
		p := ".spec." + f
		if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
			return true
		}
	}
	return false
}

// changedJobFields returns the immutable fields of the Job spec whose
// value in want differs from live's, as ".spec.<field>". Both Jobs must
// come from the server, defaults applied; the labels the server generates
// from a Job's name and UID are not compared, nor is the selector it
// generates, nor completions of an Indexed Job.
func changedJobFields(want, live *unstructured.Unstructured) []string {
	w, l := comparableJobSpec(want), comparableJobSpec(live)
	var changed []string
	for _, f := range immutableJobFields {
		if f == "completions" && w["completionMode"] == "Indexed" {
			continue
		}
		if !reflect.DeepEqual(w[f], l[f]) {
			changed = append(changed, ".spec."+f)
		}
	}
	return changed
}

// comparableJobSpec returns a copy of job's spec without what the server
// generates for each Job.
func comparableJobSpec(job *unstructured.Unstructured) map[string]any {
	spec, _, _ := unstructured.NestedMap(job.Object, "spec")
	if spec == nil {
		return map[string]any{}
	}
	if manual, _ := spec["manualSelector"].(bool); !manual {
		delete(spec, "selector")
	}
	for _, label := range generatedJobLabels {
		unstructured.RemoveNestedField(spec, "template", "metadata", "labels", label)
		unstructured.RemoveNestedField(spec, "selector", "matchLabels", label)
	}
	if labels, found, _ := unstructured.NestedMap(spec, "template", "metadata", "labels"); found && len(labels) == 0 {
		unstructured.RemoveNestedField(spec, "template", "metadata", "labels")
	}
	return spec
}

// isTemplateImmutableError reports whether err is the API server refusing
// a change of a Job's pod template: Invalid, with a cause on exactly
// spec.template (a wrong value inside the template is reported on a
// longer path).
func isTemplateImmutableError(err error) bool {
	if !apierrors.IsInvalid(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	details := status.Status().Details
	if details == nil {
		return false
	}
	return slices.ContainsFunc(details.Causes, func(c metav1.StatusCause) bool {
		return c.Type == metav1.CauseTypeFieldValueInvalid && c.Field == "spec.template"
	})
}

// replaceJob deletes the Job live (background propagation, on the
// condition that it still has live's UID, so that a Job someone created
// meanwhile under the same name is never deleted) and waits until it is
// gone, at most jobReplaceTimeout. Its Pods are left to the garbage
// collector.
func (a *Applier) replaceJob(ctx context.Context, live *unstructured.Unstructured) error {
	outcome, err := a.deleteOne(ctx, live)
	if err != nil || outcome != deletePending {
		return err
	}
	timedOut, err := pollUntil(ctx, jobReplaceTimeout, func(ctx context.Context) (bool, error) {
		exists, err := a.exists(ctx, live)
		return !exists, err
	})
	if err == nil && timedOut {
		err = fmt.Errorf("the previous Job, deleted to change its immutable fields, is still there after %s; "+
			"remove its finalizers or delete it by hand", jobReplaceTimeout)
	}
	return err
}
