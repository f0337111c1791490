package catalog_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	catalogcontroller "github.com/annex-platform/annex/internal/controller/catalog"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// versionsOf lists "version@catalog" of an Extension, or the error.
func versionsOf(name string) string {
	ext, err := getExtension(name)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, v := range ext.Spec.Versions {
		out = append(out, v.Version+"@"+v.Source.Catalog)
	}
	return strings.Join(out, " ")
}

// TestMergedCatalogsWithPriority: two catalogs offering one extension make
// one Extension; the higher priority supplies the version both offer, and
// deleting catalogs recomputes, then deletes, the Extension.
func TestMergedCatalogsWithPriority(t *testing.T) {
	ns := namespace(t)
	a := helmrepo.NewServer(t, configChart("merged", "0.9.0", "a"), configChart("merged", "1.0.0", "a"))
	b := helmrepo.NewServer(t, configChart("merged", "1.0.0", "b"), configChart("merged", "1.1.0", "b"))
	catA := createCatalog(t, "merge-a", v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: a.URL()}}, func(c *v1alpha1.Catalog) { c.Spec.Priority = 10 })
	catB := createCatalog(t, "merge-b", v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: b.URL()}})
	waitCatalogReady(t, "merge-a")
	waitCatalogReady(t, "merge-b")

	want := "1.1.0@merge-b 1.0.0@merge-a 0.9.0@merge-a"
	eventually(t, 30*time.Second, func() error {
		if got := versionsOf("merged"); got != want {
			return fmt.Errorf("versions %q, want %q", got, want)
		}
		return nil
	})
	ext, _ := getExtension("merged")
	for _, l := range []string{catalogcontroller.CatalogLabel("merge-a"), catalogcontroller.CatalogLabel("merge-b")} {
		if _, ok := ext.Labels[l]; !ok {
			t.Fatalf("labels %v lack %s", ext.Labels, l)
		}
	}
	if len(ext.OwnerReferences) != 0 {
		t.Fatalf("owner references %v: deleting a catalog must not garbage-collect Extensions", ext.OwnerReferences)
	}

	// 1.0.0 comes from catalog a, the higher priority.
	inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pinned"},
		Spec: v1alpha1.ExtensionInstallationSpec{Extension: "merged", Version: "1.0.0"}}
	if err := env.Client.Create(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	waitInstallation(t, inst, metav1.ConditionTrue, "")
	if got := configMapFrom(t, ns, "pinned"); got != "a" {
		t.Fatalf("1.0.0 installed from %q, want catalog a", got)
	}

	// Without a, b supplies every version it has.
	if err := env.Client.Delete(context.Background(), catA); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if got := versionsOf("merged"); got != "1.1.0@merge-b 1.0.0@merge-b" {
			return fmt.Errorf("versions %q after deleting merge-a", got)
		}
		return nil
	})
	// Without any catalog the Extension goes; the installation stays.
	if err := env.Client.Delete(context.Background(), catB); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if _, err := getExtension("merged"); !isNotFound(err) {
			return fmt.Errorf("Extension still there: %v", err)
		}
		return nil
	})
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(inst), inst); err != nil {
		t.Fatalf("the installation went with its catalogs: %v", err)
	}
}

// TestPrivateRepositoryBasicAuthOverTLS: a repository behind basic auth on
// HTTPS, with its CA and credentials in a Secret, syncs and installs; wrong
// credentials say so on the Catalog.
func TestPrivateRepositoryBasicAuthOverTLS(t *testing.T) {
	ns := namespace(t)
	backend := helmrepo.NewServer(t, configChart("private-app", "1.0.0", "private"))
	front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "reader" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		resp, err := http.Get(backend.URL() + r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(front.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw})
	for name, password := range map[string]string{"good": "s3cret", "bad": "guess"} {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data: map[string][]byte{"username": []byte("reader"), "password": []byte(password), "ca.crt": ca}}
		if err := env.Client.Create(context.Background(), secret); err != nil {
			t.Fatal(err)
		}
	}
	createCatalog(t, "private-good", v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: front.URL, SecretRef: &v1alpha1.SecretReference{Namespace: ns, Name: "good"}}})
	createCatalog(t, "private-bad", v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: front.URL + "/", SecretRef: &v1alpha1.SecretReference{Namespace: ns, Name: "bad"}}})
	waitCatalogReady(t, "private-good")
	installReady(t, ns, "private-app", "private-app", "")
	if got := configMapFrom(t, ns, "private-app"); got != "private" {
		t.Fatalf("ConfigMap from %q", got)
	}
	eventually(t, 30*time.Second, func() error {
		cat := &v1alpha1.Catalog{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "private-bad"}, cat); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cat.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "401 Unauthorized") {
			return fmt.Errorf("want Ready=False naming the 401, have %+v", cat.Status.Conditions)
		}
		return nil
	})
}

// TestOutageServesLastGoodContent: while the repository is down the
// catalog keeps its Extensions, stays Ready and says since when it serves
// cached content, in a message that does not change between retries; the
// installed chart, cached on disk, installs again.
func TestOutageServesLastGoodContent(t *testing.T) {
	ns := namespace(t)
	repo := helmrepo.NewServer(t, configChart("outage-app", "1.0.0", "before"))
	createCatalog(t, "outage", v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}},
		func(c *v1alpha1.Catalog) { c.Spec.Interval = metav1.Duration{Duration: time.Second} })
	waitCatalogReady(t, "outage")
	installReady(t, ns, "first", "outage-app", "")

	repo.SetDown(true)
	fetchFailed := func() (*metav1.Condition, error) {
		cat := &v1alpha1.Catalog{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "outage"}, cat); err != nil {
			return nil, err
		}
		if !meta.IsStatusConditionTrue(cat.Status.Conditions, v1alpha1.ConditionReady) {
			return nil, fmt.Errorf("not Ready during the outage: %+v", cat.Status.Conditions)
		}
		c := meta.FindStatusCondition(cat.Status.Conditions, catalogcontroller.ConditionFetchFailed)
		if c == nil || c.Status != metav1.ConditionTrue {
			return nil, fmt.Errorf("no FetchFailed condition yet: %+v", cat.Status.Conditions)
		}
		return c, nil
	}
	var first *metav1.Condition
	eventually(t, 30*time.Second, func() (err error) {
		first, err = fetchFailed()
		return err
	})
	if !strings.Contains(first.Message, "unreachable since ") || !strings.Contains(first.Message, "serving the content of ") {
		t.Fatalf("FetchFailed message %q", first.Message)
	}
	// Several more failed syncs later the message is the same.
	requests := repo.Requests("/index.yaml")
	eventually(t, 30*time.Second, func() error {
		if repo.Requests("/index.yaml") < requests+2 {
			return fmt.Errorf("waiting for more syncs")
		}
		return nil
	})
	again, err := fetchFailed()
	if err != nil || again.Message != first.Message {
		t.Fatalf("message changed across retries: %q then %q (%v)", first.Message, again.Message, err)
	}
	if got := versionsOf("outage-app"); got != "1.0.0@outage" {
		t.Fatalf("Extension during the outage: %s", got)
	}
	// The artifact comes from the cache while the repository is down.
	installReady(t, ns, "second", "outage-app", "")

	repo.SetDown(false)
	eventually(t, 30*time.Second, func() error {
		if c, err := fetchFailed(); err == nil {
			return fmt.Errorf("still %s", c.Message)
		}
		return nil
	})
}

// TestHostileContentRefused: a repository serving a hostile index and
// hostile archives. The index's bad entries are skipped and counted, the
// good ones sync; installing a hostile archive fails with a reason that
// names the attack, before Helm reads it.
func TestHostileContentRefused(t *testing.T) {
	ns := namespace(t)
	chartYAML := func(name string) string { return "apiVersion: v2\nname: " + name + "\nversion: 1.0.0\n" }
	// 25 files of 4.5 MiB of zeros: each under the file limit, 112 MiB in
	// all from about 120 KiB compressed.
	bomb := []chartFile{{hdr: tar.Header{Name: "hostile-bomb/Chart.yaml", Typeflag: tar.TypeReg, Mode: 0o644}, body: chartYAML("hostile-bomb")}}
	zeros := strings.Repeat("\x00", 4608<<10)
	for i := range 25 {
		bomb = append(bomb, chartFile{hdr: tar.Header{Name: fmt.Sprintf("hostile-bomb/files/%02d", i), Typeflag: tar.TypeReg, Mode: 0o644}, body: zeros})
	}
	archives := map[string][]byte{
		"/symlink.tgz": hostileArchive(t,
			chartFile{hdr: tar.Header{Name: "hostile-link/Chart.yaml", Typeflag: tar.TypeReg, Mode: 0o644}, body: chartYAML("hostile-link")},
			chartFile{hdr: tar.Header{Name: "hostile-link/values.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}),
		"/traversal.tgz": hostileArchive(t,
			chartFile{hdr: tar.Header{Name: "hostile-path/Chart.yaml", Typeflag: tar.TypeReg, Mode: 0o644}, body: chartYAML("hostile-path")},
			chartFile{hdr: tar.Header{Name: "hostile-path/../../x", Typeflag: tar.TypeReg, Mode: 0o644}, body: "x"}),
		"/bomb.tgz": hostileArchive(t, bomb...),
	}
	entry := func(name, url string) string {
		digest := strings.TrimPrefix(catalog.Digest(archives[url]), "sha256:")
		return fmt.Sprintf("  %s:\n  - name: %s\n    version: 1.0.0\n    urls: [%s]\n    digest: %s\n", name, name, strings.TrimPrefix(url, "/"), digest)
	}
	index := "apiVersion: v1\nentries:\n" +
		entry("hostile-link", "/symlink.tgz") + entry("hostile-path", "/traversal.tgz") + entry("hostile-bomb", "/bomb.tgz") +
		// Terminal escapes in a URL, a path as a name, a duplicate.
		"  hostile-esc:\n  - name: hostile-esc\n    version: 1.0.0\n    urls: [\"x\\e[2J.tgz\"]\n" +
		"  ../hostile:\n  - name: ../hostile\n    version: 1.0.0\n    urls: [x.tgz]\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/index.yaml" {
			_, _ = io.WriteString(w, index)
			return
		}
		if data, ok := archives[r.URL.Path]; ok {
			_, _ = w.Write(data)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	createCatalog(t, "hostile", v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: srv.URL}})
	cat := waitCatalogReady(t, "hostile")
	if cat.Status.SkippedEntries != 2 || cat.Status.ExtensionCount != 3 {
		t.Fatalf("skipped %d, synced %d; want the two bad entries skipped and three synced", cat.Status.SkippedEntries, cat.Status.ExtensionCount)
	}
	for ext, want := range map[string]string{
		"hostile-link": `entry "hostile-link/values.yaml": is a symbolic link (to "/etc/passwd")`,
		"hostile-path": `contains ".."`,
		"hostile-bomb": "expands to more than 104857600 bytes (a decompression bomb?)",
	} {
		inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ext},
			Spec: v1alpha1.ExtensionInstallationSpec{Extension: ext, Version: "*"}}
		if err := env.Client.Create(context.Background(), inst); err != nil {
			t.Fatal(err)
		}
		got := waitInstallation(t, inst, metav1.ConditionFalse, want)
		t.Logf("%s: %s", ext, meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady).Message)
	}
}

// TestResyncWritesOnlyWhatChanged: syncs of an unchanged index write no
// Extension; a changed chart rewrites its Extension and no other.
func TestResyncWritesOnlyWhatChanged(t *testing.T) {
	repo := helmrepo.NewServer(t, configChart("resync-a", "1.0.0", "x"), configChart("resync-b", "1.0.0", "x"), configChart("resync-c", "1.0.0", "x"))
	createCatalog(t, "resync", v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}},
		func(c *v1alpha1.Catalog) { c.Spec.Interval = metav1.Duration{Duration: time.Second} })
	waitCatalogReady(t, "resync")
	versions := func() map[string]string {
		out := map[string]string{}
		for _, n := range []string{"resync-a", "resync-b", "resync-c"} {
			ext, err := getExtension(n)
			if err != nil {
				t.Fatal(err)
			}
			out[n] = ext.ResourceVersion
		}
		return out
	}
	before := versions()
	requests := repo.Requests("/index.yaml")
	eventually(t, 30*time.Second, func() error {
		if repo.Requests("/index.yaml") < requests+2 {
			return fmt.Errorf("waiting for two more syncs")
		}
		return nil
	})
	if after := versions(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("unchanged index rewrote Extensions: %v -> %v", before, after)
	}
	repo.Add(t, configChart("resync-b", "1.1.0", "x"))
	eventually(t, 30*time.Second, func() error {
		if got := versionsOf("resync-b"); got != "1.1.0@resync 1.0.0@resync" {
			return fmt.Errorf("resync-b versions %q", got)
		}
		return nil
	})
	after := versions()
	if after["resync-a"] != before["resync-a"] || after["resync-c"] != before["resync-c"] || after["resync-b"] == before["resync-b"] {
		t.Fatalf("one changed chart: resource versions %v -> %v; want only resync-b rewritten", before, after)
	}
}

// chartFile is one entry of a hand-made (hostile) archive.
type chartFile struct {
	hdr  tar.Header
	body string
}

func hostileArchive(t *testing.T, files ...chartFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		f.hdr.Size = int64(len(f.body))
		if err := tw.WriteHeader(&f.hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
