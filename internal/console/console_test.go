package console_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// noRedirect is an HTTP client that shows redirects instead of following
// them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// get fetches path and returns the status and body.
func get(t *testing.T, base, path string) (int, string) {
	t.Helper()
	resp, err := noRedirect.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// post submits a form to path with headers, and returns the status, the
// Location header and the body.
func post(t *testing.T, base, path string, form url.Values, headers map[string]string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// csrfToken reads the token from the form on the extension's page.
func csrfToken(t *testing.T, base, extension string) string {
	t.Helper()
	status, body := get(t, base, "/catalog/"+extension)
	m := csrfField.FindStringSubmatch(body)
	if status != http.StatusOK || m == nil {
		t.Fatalf("GET /catalog/%s: %d, no CSRF token in:\n%s", extension, status, body)
	}
	return m[1]
}

func installationExists(t *testing.T, ns, name string) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.ExtensionInstallation{})
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return err == nil
}

// Installing is a POST that needs the console's CSRF token and a request
// from the console's own pages; without them nothing is created. With
// them, the installation is created as the console's user.
func TestActionsNeedTheCSRFToken(t *testing.T) {
	ns := namespace(t, "console-csrf")
	handWrittenExtension(t, demoChart("console-csrf", "1.0.0", ""))
	base := serveConsole(t, consoleUser(t, "console-csrf-user", map[string]string{ns: "requester"}))
	token := csrfToken(t, base, "console-csrf")
	form := func(name, csrf string) url.Values {
		return url.Values{"name": {name}, "namespace": {ns}, "csrf": {csrf}, "values.message": {"hi"}}
	}
	for _, tc := range []struct {
		name    string
		form    url.Values
		headers map[string]string
	}{
		// No token: a page elsewhere cannot post to the console.
		{"no token", form("no-token", ""), nil},
		// A token of another console, or a guess.
		{"wrong token", form("wrong-token", strings.Repeat("0", len(token))), nil},
		// The right token sent by another site's page.
		{"cross-site", form("cross-site", token), map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://attacker.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := post(t, base, "/catalog/console-csrf/install", tc.form, tc.headers)
			if status != http.StatusForbidden {
				t.Errorf("status %d, want 403; body:\n%s", status, body)
			}
			if name := tc.form.Get("name"); installationExists(t, ns, name) {
				t.Errorf("installation %s was created", name)
			}
		})
	}
	status, location, body := post(t, base, "/catalog/console-csrf/install", form("with-token", token), nil)
	if status != http.StatusSeeOther || !strings.HasPrefix(location, "/installations/"+ns+"/with-token?flash=") {
		t.Fatalf("with the token: status %d, Location %q; body:\n%s", status, location, body)
	}
	if !installationExists(t, ns, "with-token") {
		t.Error("with the token, the installation was not created")
	}
}

// A request that names another host is refused: a web page elsewhere
// cannot reach the console through a DNS name of its own (rebinding).
func TestForeignHostIsRefused(t *testing.T) {
	base := serveConsole(t, consoleUser(t, "console-host-user", nil))
	req, err := http.NewRequest(http.MethodGet, base+"/catalog", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "attacker.example"
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("Host attacker.example: status %d, want 421", resp.StatusCode)
	}
	if status, _ := get(t, base, "/catalog"); status != http.StatusOK {
		t.Errorf("Host 127.0.0.1: status %d, want 200", status)
	}
}

// Every action is the user's: a user who may read but not write
// installations in a namespace is refused by the API server, and the
// form says so; a user who may not list installations cluster-wide sees
// why on the pages that list them.
func TestTheUsersRBACApplies(t *testing.T) {
	ns := namespace(t, "console-rbac")
	handWrittenExtension(t, demoChart("console-rbac", "1.0.0", ""))
	reader := serveConsole(t, consoleUser(t, "console-rbac-reader", nil))
	token := csrfToken(t, reader, "console-rbac")
	status, _, body := post(t, reader, "/catalog/console-rbac/install",
		url.Values{"name": {"denied"}, "namespace": {ns}, "csrf": {token}}, nil)
	if status != http.StatusForbidden || !strings.Contains(body, "forbidden") || !strings.Contains(body, "console-rbac-reader") {
		t.Errorf("install without create on extensioninstallations: status %d, want 403 naming the user; body:\n%s", status, body)
	}
	if installationExists(t, ns, "denied") {
		t.Error("the installation was created despite RBAC")
	}

	// No role at all: the informers are not started, and the pages say
	// what is missing.
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "console-rbac-nobody"}
	nobody := serveConsole(t, cfg)
	for _, path := range []string{"/catalog", "/installations", "/clusters", "/approvals"} {
		status, body := get(t, nobody, path)
		if status != http.StatusForbidden || !strings.Contains(body, "you (console-rbac-nobody) may not list and watch") {
			t.Errorf("GET %s without RBAC: status %d, want 403 saying what is missing; body:\n%s", path, status, body)
		}
	}
}
