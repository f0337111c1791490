package record

import (
	"errors"
	"fmt"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// A record that cannot be stored stops the installation, saying what to
// do; any other error of the write is retried.
func TestRefusedStop(t *testing.T) {
	inst := &v1alpha1.ExtensionInstallation{}
	inst.Spec.Extension = "web"
	rev := &v1alpha1.Revision{Number: 4, Version: "2.0.0"}
	if b := RefusedStop(inst, rev, errors.New("connection refused")); b != nil {
		t.Fatalf("a transient error stops: %+v", b)
	}
	tooLarge := fmt.Errorf("writing: %w", &TooLargeError{What: "the record", Size: 2 << 20, Limit: 1 << 20})
	b := RefusedStop(inst, rev, tooLarge)
	want := fmt.Sprintf("cannot record revision 4 of web 2.0.0: %v; render less (check spec.values) or choose another version with spec.version", tooLarge)
	if b == nil || b.Reason != v1alpha1.ReasonRecordTooLarge || b.Message != want {
		t.Fatalf("RefusedStop = %+v, want %s", b, want)
	}
}
