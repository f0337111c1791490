package console

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/internal/cli"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFiles embed.FS

// staticFS serves the stylesheet and the script under /static/.
var staticFS fs.FS = staticFiles

// page is what every template receives.
type page struct {
	// Title is the page's heading and the start of its <title>.
	Title string
	// Nav is the navigation entry to mark current: catalog, clusters,
	// installations, approvals or rollouts.
	Nav string
	// Live pages refresh their content when the informers see a change:
	// of any watched object, or of the one LiveKey names.
	Live    bool
	LiveKey string
	// User is who the API server says the console acts as.
	User string
	// CSRF is the token every form posts back.
	CSRF string
	// Seq is the change number the page reflects; Now when it was made.
	Seq   uint64
	Now   time.Time
	Flash *flash
	// Data is the page's own view model.
	Data any
}

// pages holds one template set per page: the layout with the page's
// "main" block.
type pages map[string]*template.Template

var pageNames = []string{"catalog", "extension", "clusters", "installations", "installation", "approvals", "rollouts", "rollout", "error"}

func parsePages() (pages, error) {
	out := pages{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parsing the console's %s page: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

func (p pages) execute(w io.Writer, name, tmpl string, data *page) error {
	t, ok := p[name]
	if !ok {
		return fmt.Errorf("no page %q", name)
	}
	return t.ExecuteTemplate(w, tmpl, data)
}

var funcs = template.FuncMap{
	// age is how long ago t was, as annexctl prints it ("5s", "3m").
	"age": func(now time.Time, t any) string {
		switch t := t.(type) {
		case time.Time:
			return cli.Age(now, t)
		case metav1.Time:
			return cli.Age(now, t.Time)
		case *metav1.Time:
			if t == nil {
				return "-"
			}
			return cli.Age(now, t.Time)
		case *time.Time:
			if t == nil {
				return "-"
			}
			return cli.Age(now, *t)
		}
		return "-"
	},
	"join": strings.Join,
	// inc is n+1: a step's index as people count ("step 2/3").
	"inc": func(n int32) int32 { return n + 1 },
	// status is the CSS class of a condition status or a health word:
	// the text says the same, the colour only helps.
	"status": statusClass,
	// condStatus is the CSS class of a condition: True is good news for
	// Ready, Resolved and Installed, bad news for Stalled, and work under
	// way for Reconciling.
	"condStatus": func(condType, status string) string {
		switch condType {
		case "Stalled", "Warnings", "FetchFailed", "Halted":
			if status == "True" {
				return "bad"
			}
			return "ok"
		case "Reconciling", "Progressing":
			if status == "True" {
				return "wait"
			}
			return "ok"
		}
		return statusClass(status)
	},
	"timestamp": func(t time.Time) string {
		return t.UTC().Format(time.RFC3339)
	},
	"clock": func(t time.Time) string {
		return t.Format("15:04:05")
	},
	"deref": func(p any) any {
		switch p := p.(type) {
		case *float64:
			if p != nil {
				return *p
			}
		case *int:
			if p != nil {
				return *p
			}
		}
		return nil
	},
	"short": func(digest string) string {
		d := strings.TrimPrefix(digest, "sha256:")
		if len(d) > 12 {
			return d[:12]
		}
		return d
	},
}

// statusClass maps a status word to one of ok, bad, wait and unknown.
func statusClass(s string) string {
	switch strings.ToLower(s) {
	case "true", "ready", "current", "healthy", "complete", "approved", "reachable", "yes", "fits", "succeeded", "done":
		return "ok"
	case "false", "failed", "error", "fatal_error", "stalled", "unreachable", "notfound", "no", "denied", "halted", "rolledback":
		return "bad"
	case "inprogress", "in_progress", "pending", "progressing", "reconciling", "waiting", "unknown", "",
		"soaking", "waitingforapproval", "paused", "rollingback":
		return "wait"
	}
	return "unknown"
}
