package apply

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
