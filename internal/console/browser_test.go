package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
)

// The console in a real browser (Debian's chromium, `make browser`),
// against a real API server with the Annex manager running: a search
// finds an extension, the install form generated from its values schema
// creates an installation that reaches Ready on screen without a reload,
// a failing installation shows its reason, and an approval clicked in
// the browser applies the change. Screenshots go to bin/screenshots/.
func TestConsoleInBrowser(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "console-browser")
	gated := namespace(t, "console-approvals")
	handWrittenExtension(t, demoChart("console-demo", "1.0.0", ">=1.20.0"), demoChart("console-demo", "0.9.0", "<1.20.0"))
	catalogOf(t, "console-browser",
		demoChart("console-broken", "1.0.0", ">=9.0.0"),
		demoChart("console-gated", "1.0.0", ""),
		demoChart("console-repo", "1.0.0", ""))
	const user = "console-browser-user"
	base := serveConsole(t, consoleUser(t, user, map[string]string{ns: "requester", gated: "approver"}))
	b := newBrowser(t)

	t.Run("search finds an extension", func(t *testing.T) {
		b.run(t, chromedp.Navigate(base+"/catalog"),
			chromedp.WaitVisible(chromedp.CSS(`#q`)),
			chromedp.SendKeys(chromedp.CSS(`#q`), "console-de\r"),
			chromedp.WaitVisible(chromedp.CSS(`#results a[href="/catalog/console-demo"]`)))
		b.waitText(t, "#results-heading", "matching “console-de”")
		if got := b.text(t, "#results"); strings.Contains(got, "console-broken") {
			t.Errorf("the search for console-de lists console-broken: %q", got)
		}
		b.screenshot(t, "catalog")
		b.run(t, chromedp.Click(chromedp.CSS(`#results a[href="/catalog/console-demo"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#versions`)))
		// 1.0.0 fits the hub's Kubernetes, 0.9.0 (<1.20.0) does not, and
		// says why.
		versions := b.text(t, "#versions")
		for _, want := range []string{"1.0.0", "fits", "0.9.0", "needs Kubernetes <1.20.0"} {
			if !strings.Contains(versions, want) {
				t.Errorf("versions table lacks %q:\n%s", want, versions)
			}
		}
		if got := b.text(t, "#values-schema"); !strings.Contains(got, "The greeting the ConfigMap holds.") {
			t.Errorf("values schema table: %q", got)
		}
	})

	t.Run("a Helm repository's chart has the fields of its schema", func(t *testing.T) {
		// The repository's index carries no schema: the page asks the
		// manager to read the chart, and the form has a field for every
		// property, the chart's values.yaml default as placeholder.
		b.run(t, chromedp.Navigate(base+"/catalog/console-repo"), chromedp.WaitVisible(chromedp.CSS(`#install-form`)),
			chromedp.WaitVisible(chromedp.CSS(`#value-message`)))
		for id, want := range map[string]string{"value-message": "hello", "value-replicas": "1"} {
			if got := b.eval(t, `document.getElementById(`+jsString(id)+`).placeholder`); got != want {
				t.Errorf("#%s placeholder %q, want the chart's default %q", id, got, want)
			}
		}
		b.waitText(t, `#value-color option[value=""]`, "chart default (blue)")
		b.waitText(t, `#value-enabled option[value=""]`, "chart default (true)")
		if got := b.text(t, "#values-schema"); !strings.Contains(got, "The greeting the ConfigMap holds.") || !strings.Contains(got, "hello") {
			t.Errorf("values table: %q", got)
		}
		b.screenshot(t, "install-form-helm-repository")
	})

	t.Run("install through the form reaches Ready on screen", func(t *testing.T) {
		b.run(t, chromedp.Navigate(base+"/catalog/console-demo"), chromedp.WaitVisible(chromedp.CSS(`#install-form`)),
			chromedp.SetValue(chromedp.CSS(`#name`), "demo"),
			chromedp.SetValue(chromedp.CSS(`#namespace`), ns),
			chromedp.SendKeys(chromedp.CSS(`#value-message`), "Hello from the browser"),
			chromedp.SetValue(chromedp.CSS(`#value-color`), "green"),
			chromedp.SendKeys(chromedp.CSS(`#value-replicas`), "3"),
			chromedp.SetValue(chromedp.CSS(`#value-enabled`), "false"))
		b.screenshot(t, "install-form")
		b.run(t, chromedp.Click(chromedp.CSS(`#install-form button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`#ready`)))
		if loc, err := url.Parse(b.location(t)); err != nil || loc.Path != "/installations/"+ns+"/demo" {
			t.Fatalf("after install the browser is at %v (%v)", loc, err)
		}
		b.waitText(t, ".flash", "Created ExtensionInstallation "+ns+"/demo as "+user)
		// Mark the page: if Ready appears without the mark gone, the page
		// updated itself live, not by a reload.
		b.eval(t, `window.consoleTestMark = "unchanged"`)
		b.waitText(t, "#ready", "True")
		if mark := b.eval(t, `String(window.consoleTestMark)`); mark != "unchanged" {
			t.Errorf("the page reloaded to show Ready; want a live update")
		}
		b.waitText(t, "#inventory", "Current")
		b.waitText(t, "#history", "1.0.0")
		b.screenshot(t, "installation")

		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "demo-config"}, cm); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"message": "Hello from the browser", "color": "green", "replicas": "3", "enabled": "false", "version": "1.0.0"}
		for k, v := range want {
			if cm.Data[k] != v {
				t.Errorf("ConfigMap demo-config data.%s = %q, want %q (data %v)", k, cm.Data[k], v, cm.Data)
			}
		}
		inst, _ := readyCondition(t, ns, "demo")
		if got := inst.Annotations[v1alpha1.AnnotationRequestedBy]; got != user {
			t.Errorf("the installation was requested by %q, want the console's user %q", got, user)
		}
	})

	t.Run("a failing installation shows its reason", func(t *testing.T) {
		create(t, &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"},
			Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "console-broken"},
		})
		testenv.Eventually(t, 60*time.Second, func() error {
			if _, c := readyCondition(t, ns, "broken"); c == nil || c.Reason != v1alpha1.ReasonNoMatchingVersion {
				return fmt.Errorf("broken: Ready %+v", c)
			}
			return nil
		})
		_, c := readyCondition(t, ns, "broken")
		b.run(t, chromedp.Navigate(base+"/installations/"+ns+"/broken"), chromedp.WaitVisible(chromedp.CSS(`#ready`)))
		b.waitText(t, "#ready", "False")
		b.waitText(t, "#reason", v1alpha1.ReasonNoMatchingVersion)
		b.waitText(t, "#message", firstLine(c.Message))
		b.screenshot(t, "failing")
		b.run(t, chromedp.Navigate(base+"/installations?notready=1&q=broken"), chromedp.WaitVisible(chromedp.CSS(`table.installations`)))
		b.waitText(t, "table.installations", v1alpha1.ReasonNoMatchingVersion)
		if got := b.text(t, "main"); strings.Contains(got, ns+"/demo") {
			t.Errorf("the not-Ready filter lists the Ready installation demo:\n%s", got)
		}
	})

	t.Run("an approval clicked in the browser applies the plan", func(t *testing.T) {
		policy := &v1alpha1.ApprovalPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "console-browser"},
			Spec: v1alpha1.ApprovalPolicySpec{Selector: v1alpha1.ApprovalSelector{Namespaces: []string{gated}},
				Preset: v1alpha1.ApprovalManual},
		}
		create(t, policy)
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), policy) })
		// The admin requests the change; the console's user approves it.
		create(t, &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: gated, Name: "gated"},
			Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "console-gated"},
		})
		testenv.Eventually(t, 60*time.Second, func() error {
			if _, c := readyCondition(t, gated, "gated"); c == nil || c.Reason != v1alpha1.ReasonApprovalRequired {
				return fmt.Errorf("gated: Ready %+v", c)
			}
			return nil
		})
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: gated, Name: "gated-config"}, cm); err == nil {
			t.Fatal("the gated change was applied before approval")
		}
		button := `#approve-` + gated + `-gated`
		b.run(t, chromedp.Navigate(base+"/approvals"), chromedp.WaitVisible(chromedp.CSS(button)))
		card := b.text(t, "article.approval")
		for _, want := range []string{"console-gated", "PreInstall", "policies console-browser", "sha256:"} {
			if !strings.Contains(card, want) {
				t.Errorf("the approval card lacks %q:\n%s", want, card)
			}
		}
		b.screenshot(t, "approvals")
		b.run(t, chromedp.Click(chromedp.CSS(button)), chromedp.WaitVisible(chromedp.CSS(`.flash`)))
		b.waitText(t, ".flash", "approved as "+user)
		testenv.Eventually(t, 60*time.Second, func() error {
			if _, c := readyCondition(t, gated, "gated"); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("gated: Ready %+v", c)
			}
			return nil
		})
		var approvals v1alpha1.ApprovalList
		if err := env.Client.List(ctx, &approvals, client.InNamespace(gated)); err != nil {
			t.Fatal(err)
		}
		if len(approvals.Items) != 1 || approvals.Items[0].Spec.Approver != user || approvals.Items[0].Spec.Installation != "gated" {
			t.Errorf("want one Approval of gated by %s, got %+v", user, approvals.Items)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: gated, Name: "gated-config"}, cm); err != nil {
			t.Errorf("the approved change was not applied: %v", err)
		}
		// The approvals page empties itself once the change is applied.
		b.waitText(t, "main", "No change waits for approval.")
		b.run(t, chromedp.Navigate(base+"/installations/"+gated+"/gated"), chromedp.WaitVisible(chromedp.CSS(`#ready`)))
		b.waitText(t, "#ready", "True")

		// A denial typed and clicked in the browser stops another change
		// with its reason, and nothing of it is applied.
		create(t, &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: gated, Name: "refused"},
			Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "console-gated"},
		})
		testenv.Eventually(t, 60*time.Second, func() error {
			if _, c := readyCondition(t, gated, "refused"); c == nil || c.Reason != v1alpha1.ReasonApprovalRequired {
				return fmt.Errorf("refused: Ready %+v", c)
			}
			return nil
		})
		deny := `#deny-` + gated + `-refused`
		b.run(t, chromedp.Navigate(base+"/approvals"), chromedp.WaitVisible(chromedp.CSS(deny)),
			chromedp.SendKeys(chromedp.CSS(`#reason-`+gated+`-refused`), "not in this namespace"),
			chromedp.Click(chromedp.CSS(deny)), chromedp.WaitVisible(chromedp.CSS(`.flash`)))
		b.waitText(t, ".flash", "denied as "+user)
		testenv.Eventually(t, 60*time.Second, func() error {
			if _, c := readyCondition(t, gated, "refused"); c == nil || c.Reason != v1alpha1.ReasonApprovalDenied ||
				!strings.Contains(c.Message, user+" denied console-gated") || !strings.Contains(c.Message, "not in this namespace") {
				return fmt.Errorf("refused: Ready %+v", c)
			}
			return nil
		})
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: gated, Name: "refused-config"}, cm); err == nil {
			t.Error("the denied change was applied")
		}
		b.run(t, chromedp.Navigate(base+"/installations/"+gated+"/refused"), chromedp.WaitVisible(chromedp.CSS(`#ready`)))
		b.waitText(t, "#reason", v1alpha1.ReasonApprovalDenied)
		b.screenshot(t, "denied")
	})

	t.Run("clusters and installations", func(t *testing.T) {
		b.run(t, chromedp.Navigate(base+"/clusters"), chromedp.WaitVisible(chromedp.CSS(`#clusters`)))
		kube, err := testenv.KubeVersion()
		if err != nil {
			t.Fatal(err)
		}
		b.waitText(t, "#clusters", kube)
		b.waitText(t, "#clusters", "reachable")
		b.waitText(t, "#kubernetes-versions", kube)
		b.screenshot(t, "clusters")
		// A selector that does not parse: the page names the parameter
		// and keeps the form to correct it.
		b.run(t, chromedp.SendKeys(chromedp.CSS(`#f-selector`), "env in prod\r"),
			chromedp.WaitVisible(chromedp.CSS(`#filter-error`)))
		b.waitText(t, "#filter-error", `selector: "env in prod" is not a label selector`)
		b.screenshot(t, "clusters-invalid-selector")
		b.run(t, chromedp.Navigate(base+"/installations"), chromedp.WaitVisible(chromedp.CSS(`table.installations`)))
		b.waitText(t, "main", ns+"/demo")
		b.screenshot(t, "installations")
	})
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 60 {
		line = line[:60]
	}
	return line
}

// browser is one headless Chromium tab.
type browser struct {
	ctx context.Context
}

// newBrowser starts Debian's chromium headless, with the flags that keep
// it off the network, in a fresh profile; it stops when the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the console's browser tests need Chromium: run `make browser` (as root it runs apt-get install -y chromium): %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1366, 900), // a laptop screen
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return &browser{ctx: ctx}
}

// run runs actions, failing the test after a minute.
func (b *browser) run(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v; page text:\n%s", err, b.pageText())
	}
}

// eval evaluates a JavaScript expression whose value is a string.
func (b *browser) eval(t *testing.T, expr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("browser: evaluating %s: %v", expr, err)
	}
	return s
}

// text is the visible text of the first element sel matches ("" when
// none does).
func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	return b.eval(t, fmt.Sprintf(`(document.querySelector(%s) || {innerText: ""}).innerText`, jsString(sel)))
}

func (b *browser) location(t *testing.T) string {
	t.Helper()
	return b.eval(t, `location.href`)
}

// waitText waits until the first element sel matches shows want, for
// up to 90 seconds: the page must change on its own (live updates).
func (b *browser) waitText(t *testing.T, sel, want string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		got := b.text(t, sel)
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not show %q after 90s; it shows:\n%s", sel, want, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (b *browser) pageText() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// assertAccessible fails the test when the page has a form control
// without a label, a button without text, or no <main> and <h1>.
func (b *browser) assertAccessible(t *testing.T) {
	t.Helper()
	problems := b.eval(t, `(() => {
		const out = [];
		for (const el of document.querySelectorAll("input:not([type=hidden]), select, textarea")) {
			if (el.labels.length === 0 && !el.getAttribute("aria-label")) out.push("unlabelled " + el.tagName + " " + (el.name || el.id));
		}
		for (const el of document.querySelectorAll("button")) {
			if (!el.innerText.trim()) out.push("button without text");
		}
		if (!document.querySelector("main h1")) out.push("no <main> with an <h1>");
		if (!document.documentElement.lang) out.push("no lang on <html>");
		return out.join("; ");
	})()`)
	if problems != "" {
		t.Errorf("%s: %s", b.location(t), problems)
	}
}

// screenshot checks the page's accessibility basics and saves the whole
// page as bin/screenshots/NAME.png.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	b.assertAccessible(t)
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 is PNG
	if err != nil {
		t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "bin", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func jsString(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}
