package installation_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// TestDigestMismatchIsTerminalUntilResync serves an archive whose bytes
// differ from the digest the catalog indexed: the installation stops with
// a terminal condition naming both digests instead of retrying forever,
// and goes on once the catalog is resynced and records the new digest.
func TestDigestMismatchIsTerminalUntilResync(t *testing.T) {
	ctx := context.Background()
	indexed := podinfoChart("digestapp", "1.0.0", nil)
	ns, repo := setup(t, indexed)
	// The repository re-publishes 1.0.0 with other content and does not
	// reindex.
	republished := podinfoChart("digestapp", "1.0.0", map[string]string{"values.yaml": "replicas: 0\nmessage: republished\n"})
	repo.ReplaceArchive(t, republished)
	want, got := chartDigest(t, indexed), chartDigest(t, republished)

	inst := install(t, ns, "web", "digestapp", "1.0.0")
	stopped := waitCondition(t, inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonDigestMismatch)
	for _, condType := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionInstalled} {
		c := meta.FindStatusCondition(stopped.Status.Conditions, condType)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonDigestMismatch {
			t.Fatalf("%s: want False/%s, conditions: %s", condType, v1alpha1.ReasonDigestMismatch, describeConditions(stopped))
		}
		for _, part := range []string{"has digest " + got, fmt.Sprintf("catalog %q recorded %s", ns, want), "resync catalog", "choose another version with spec.version"} {
			if !strings.Contains(c.Message, part) {
				t.Errorf("%s message %q does not contain %q", condType, c.Message, part)
			}
		}
	}
	if stopped.Status.ObservedGeneration != stopped.Generation {
		t.Errorf("observedGeneration %d, want %d: a terminal block is observed", stopped.Status.ObservedGeneration, stopped.Generation)
	}
	// Terminal: the archive is not downloaded again and again.
	archive := "/digestapp-1.0.0.tgz"
	before := repo.Requests(archive)
	time.Sleep(3 * time.Second)
	if after := repo.Requests(archive); after != before {
		t.Errorf("the archive was requested %d more times after the terminal condition; want none", after-before)
	}

	// The change was intended: reindex, and resync the catalog by changing
	// its spec. The Extension records the new digest, which wakes the
	// installation.
	repo.Add(t, republished)
	cat := &v1alpha1.Catalog{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, cat); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cat.DeepCopy())
	cat.Spec.Interval = metav1.Duration{Duration: time.Hour}
	if err := env.Client.Patch(ctx, cat, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		ext := &v1alpha1.Extension{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "digestapp"}, ext); err != nil {
			return err
		}
		if d := ext.Spec.Versions[0].Source.Digest; d != got {
			return fmt.Errorf("the Extension records %s, want %s", d, got)
		}
		return nil
	})
	ready := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if meta.FindStatusCondition(ready.Status.Conditions, v1alpha1.ConditionStalled) != nil {
		t.Errorf("Stalled stays after the install: %s", describeConditions(ready))
	}
	cm, err := get(t, configMapGVK, ns, "web-config")
	if err != nil {
		t.Fatal(err)
	}
	if msg, _, _ := unstructured.NestedString(cm.Object, "data", "message"); msg != "republished" {
		t.Errorf("message %q, want the republished chart's", msg)
	}
}

// chartDigest is the "sha256:<hex>" digest of c's archive.
func chartDigest(t *testing.T, c helmrepo.Chart) string {
	t.Helper()
	data, err := helmrepo.Archive(c)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
