package profile

import (
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestDescribe(t *testing.T) {
	p := &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: "base"}, Spec: v1alpha1.ExtensionProfileSpec{Namespace: "fleet"}}
	orphan := p.DeepCopy()
	orphan.Spec.RemovalPolicy = v1alpha1.DeletionPolicyOrphan
	now := metav1.Now()
	existing := &v1alpha1.ExtensionInstallation{Spec: v1alpha1.ExtensionInstallationSpec{Extension: "podinfo", Cluster: "edge"}}
	deleting := existing.DeepCopy()
	deleting.DeletionTimestamp = &now
	ext := v1alpha1.ProfileExtension{Name: "podinfo", Mode: v1alpha1.ProfileModeEnforced}
	cases := []struct {
		name    string
		p       *v1alpha1.ExtensionProfile
		a       action
		reason  string // "" when no event
		message string // a part of the message
	}{
		{"create on the hub", p, action{kind: actCreate, name: "podinfo-hub", want: want{ext: ext}}, "InstallationCreated", "fleet/podinfo-hub: podinfo (Enforced) on cluster hub"},
		{"update", p, action{kind: actUpdate, name: "podinfo-edge", want: want{cluster: "edge", ext: ext}, existing: existing}, "InstallationUpdated", "on cluster edge"},
		{"remove", p, action{kind: actRemove, name: "podinfo-edge", existing: existing}, "InstallationRemoved", "deleted (it uninstalls)"},
		{"release", orphan, action{kind: actRemove, name: "podinfo-edge", existing: existing}, "InstallationRemoved", "removalPolicy Orphan"},
		// Already being deleted: told when it was removed.
		{"remove again", p, action{kind: actRemove, name: "podinfo-edge", existing: deleting}, "", ""},
		// Bookkeeping is no news.
		{"record default", p, action{kind: actRecordDefault, name: "podinfo-edge"}, "", ""},
	}
	for _, tc := range cases {
		reason, message, ok := describe(tc.p, tc.a)
		if ok != (tc.reason != "") || reason != tc.reason || !strings.Contains(message, tc.message) {
			t.Errorf("%s: %v %q %q, want %q with %q", tc.name, ok, reason, message, tc.reason, tc.message)
		}
	}
}

// TestSummary makes one Event of many installations' news on a cluster,
// within the API server's limit on a note.
func TestSummary(t *testing.T) {
	one := "created ExtensionInstallation fleet/a-edge: a (Default) on cluster edge"
	if got := summary("InstallationCreated", "edge", []string{one}); got != one {
		t.Errorf("one message: %q", got)
	}
	if got := summary("InstallationCreated", "edge", []string{one, one}); got != "2 on cluster edge (InstallationCreated): "+one+"; "+one {
		t.Errorf("two messages: %q", got)
	}
	many := make([]string, 100)
	for i := range many {
		many[i] = one
	}
	got := summary("InstallationCreated", "edge", many)
	if len(got) > eventNoteLimit || !strings.HasPrefix(got, "100 on cluster edge (InstallationCreated): "+one) || !strings.Contains(got, "more") {
		t.Errorf("100 messages (%d bytes): %q", len(got), got)
	}
	if got := summary("X", "edge", []string{strings.Repeat("x", 2000)}); len(got) > eventNoteLimit {
		t.Errorf("a long message: %d bytes", len(got))
	}
	if got := summary("X", "edge", []string{strings.Repeat("é", 1000)}); len(got) > eventNoteLimit || !utf8.ValidString(got) {
		t.Errorf("a long message of two-byte characters: %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
	}
}
