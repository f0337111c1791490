package installation

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/record"
)

// A record that cannot be stored stops the installation with a condition
// naming the size and the limit, instead of being retried forever; a
// transient failure is retried.
func TestRecordRefused(t *testing.T) {
	tooLarge := &record.TooLargeError{What: "the rendered set", Size: 200 << 20, Limit: record.MaxSize}
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "annex.big.v1",
		field.ErrorList{field.TooLong(field.NewPath("data"), "", 1<<20)})
	for _, tc := range []struct {
		name     string
		err      error
		terminal bool
		message  string
	}{
		// Over MaxSize: nothing Annex can do but say so.
		{"too large", tooLarge, true, "cannot record revision 3 of big 1.0.0: the rendered set is 200.0 MiB (209715200 bytes); Annex stores at most 128.0 MiB"},
		// The API server refuses the Secret: retrying sends the same bytes.
		{"invalid", invalid, true, "Too long"},
		// A network error is retried.
		{"transient", errors.New("connection refused"), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scope{inst: &v1alpha1.ExtensionInstallation{Spec: v1alpha1.ExtensionInstallationSpec{Extension: "big"}}}
			err := (&Reconciler{}).recordRefused(s, &v1alpha1.Revision{Number: 3, Version: "1.0.0"}, tc.err)
			if !tc.terminal {
				if s.block != nil || ignoreRefused(err) == nil {
					t.Fatalf("a transient error must be retried: block %v, err %v", s.block, err)
				}
				return
			}
			if ignoreRefused(err) != nil || s.block == nil || s.block.Kind != blockTerminal || s.block.Reason != v1alpha1.ReasonRecordTooLarge {
				t.Fatalf("want a terminal RecordTooLarge block, got %+v (err %v)", s.block, err)
			}
			if !strings.Contains(s.block.Message, tc.message) || !strings.Contains(s.block.Message, "spec.values") {
				t.Errorf("message %q, want it to contain %q and say what to change", s.block.Message, tc.message)
			}
		})
	}
}
