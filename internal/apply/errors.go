package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// ObjectError is a failure to act on one object. Op is the action that
// failed ("apply", "delete", "read"); Err is the cause.
type ObjectError struct {
	Op     string
	Object v1alpha1.ObjectReference
	Err    error
}

func (e *ObjectError) Error() string {
	return fmt.Sprintf("%s %s: %v", e.Op, describe(e.Object), e.Err)
}

func (e *ObjectError) Unwrap() error { return e.Err }

// ConflictError means an object, or some of its fields, belong to someone
// else, so Annex refused to take them over. Either Managers and Fields are
// set (server-side apply found fields owned by other field managers), or
// Installation is (the object carries the labels of another installation).
type ConflictError struct {
	Object v1alpha1.ObjectReference
	// Managers are the other field managers, sorted and without repeats.
	Managers []string
	// Fields are the conflicting field paths, as the API server names them.
	Fields []string
	// Installation is "namespace/name" of the installation that owns the
	// object, when the conflict is one of ownership labels.
	Installation string
}

// OwnershipConflict marks the error as one a person must resolve; callers
// treat it as terminal without importing this package.
func (e *ConflictError) OwnershipConflict() bool { return true }

func (e *ConflictError) Error() string {
	obj := describe(e.Object)
	if e.Installation != "" {
		return fmt.Sprintf("apply %s: the object belongs to installation %s; "+
			"remove it from that installation or delete the object", obj, e.Installation)
	}
	quoted := make([]string, len(e.Managers))
	for i, m := range e.Managers {
		quoted[i] = strconv.Quote(m)
	}
	managers := strings.Join(quoted, ", ")
	return fmt.Sprintf("apply %s: field manager %q conflicts with %s on %s; "+
		"stop managing these fields with %s, delete the object so that Annex creates it anew, "+
		"or set spec.takeOwnership: true on the installation to take them over",
		obj, v1alpha1.FieldManager, managers, strings.Join(e.Fields, ", "), managers)
}

// describe names an object the way people read it: "Kind namespace/name",
// or "Kind name" when cluster-scoped.
func describe(ref v1alpha1.ObjectReference) string {
	if ref.Namespace == "" {
		return ref.Kind + " " + ref.Name
	}
	return ref.Kind + " " + ref.Namespace + "/" + ref.Name
}

// fieldConflict turns a server-side apply conflict returned by the API
// server into a *ConflictError, or returns nil when err is not one.
func fieldConflict(ref v1alpha1.ObjectReference, err error) *ConflictError {
	if !apierrors.IsConflict(err) {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	c := &ConflictError{Object: ref}
	seen := map[string]bool{}
	for _, cause := range status.Status().Details.Causes {
		if cause.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		c.Fields = append(c.Fields, cause.Field)
		m := managerOf(cause.Message)
		if !seen[m] {
			seen[m] = true
			c.Managers = append(c.Managers, m)
		}
	}
	if len(c.Fields) == 0 {
		return nil
	}
	slices.Sort(c.Managers)
	slices.Sort(c.Fields)
	return c
}

// managerOf extracts the manager name from a cause message such as
// `conflict with "kubectl" using v1 at 2025-01-01T00:00:00Z`. It drops
// the time so that the error text stays the same across retries.
func managerOf(msg string) string {
	rest, ok := strings.CutPrefix(msg, "conflict with ")
	if !ok {
		return msg
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return rest
	}
	m, err := strconv.Unquote(q)
	if err != nil {
		return rest
	}
	return m
}

// kwokNodeAnnotation marks the fake nodes of kwok (kwok.x-k8s.io/node),
// which `annex dev` and the test clusters run: they run no containers.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// noContainersHint is what an apply error adds when a webhook could not be
// called on a cluster whose nodes run no containers.
const noContainersHint = "the cluster's nodes are kwok's fake nodes (a local cluster of annex dev), which run no containers, " +
	"so a webhook served by a Pod never answers: turn the chart's webhooks off in its values, or install on a cluster with real nodes"

// webhookUnreachable reports whether err is the API server failing to call
// an admission or conversion webhook, as opposed to a webhook's refusal,
// which is an answer.
func webhookUnreachable(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "failed calling webhook") || strings.Contains(msg, "conversion webhook for")
}

// explainWebhookFailure adds noContainersHint to err when err is a webhook
// the API server could not call (webhookUnreachable) and the cluster's
// nodes run no containers; otherwise it returns err as it is.
func explainWebhookFailure(err error, noContainers bool) error {
	if err == nil || !noContainers || !webhookUnreachable(err) {
		return err
	}
	return fmt.Errorf("%w; %s", err, noContainersHint)
}

// explainApplyError is explainWebhookFailure for this Applier's cluster. It
// lists the nodes only for a webhook failure: their names and annotations,
// at most 100; the nodes run no containers when every one is kwok's. When
// they cannot be listed, err stays as it is.
func (a *Applier) explainApplyError(ctx context.Context, err error) error {
	if err == nil || !webhookUnreachable(err) {
		return err
	}
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if listErr := a.Client.List(ctx, nodes, client.Limit(100)); listErr != nil || len(nodes.Items) == 0 {
		return err
	}
	for _, n := range nodes.Items {
		if _, fake := n.Annotations[kwokNodeAnnotation]; !fake {
			return err
		}
	}
	return explainWebhookFailure(err, true)
}
