package console

import (
	"bytes"
	"context"
	"net/http"
	"strings"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
)

func (s *Server) installationPage(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	d, err := cli.Describe(r.Context(), s.client, s.health, ns, name)
	if err != nil {
		s.fail(w, r, "Installation "+ns+"/"+name, err)
		return
	}
	v := installationView{InstallationDetail: d}
	for _, st := range cli.Stages {
		v.StageList = append(v.StageList, string(st))
	}
	s.render(w, r, http.StatusOK, "installation", &page{Title: ns + "/" + name, Nav: "installations", Live: true, LiveKey: objectKey(ns, name), Data: v})
}

// installationView is the installation page: the detail annexctl would
// print, and the stages of an install in order.
type installationView struct {
	*cli.InstallationDetail
	StageList []string
}

// health reads the health of hub objects as the user (one GET each).
func (s *Server) health(ctx context.Context, inventory []v1alpha1.ObjectReference) ([]cli.ObjectHealth, error) {
	h, err := s.applier.Health(ctx, inventory)
	if err != nil {
		return nil, err
	}
	out := make([]cli.ObjectHealth, 0, len(h.Pending))
	for _, p := range h.Pending {
		out = append(out, cli.ObjectHealth{Ref: p.Ref, Status: p.Status, Message: p.Message})
	}
	return out, nil
}

// approvalsView is the approvals page.
type approvalsView struct {
	Requests []cli.ApprovalRequest
}

func (s *Server) approvalsPage(w http.ResponseWriter, r *http.Request) {
	reqs, err := cli.ApprovalRequests(r.Context(), s.client, "")
	if err != nil {
		s.fail(w, r, "Approvals", err)
		return
	}
	s.render(w, r, http.StatusOK, "approvals", &page{Title: "Approvals", Nav: "approvals", Live: true, Data: approvalsView{Requests: reqs}})
}

// approve creates, as the user, an Approval of exactly the digest the
// form showed (cli.Approve refuses when the pending change has another
// one since) — with decision Deny and the reason given when the form's
// decision is "deny" — and goes back to the page it came from with what
// happened.
func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	o := cli.ApproveOptions{Installation: name, Namespace: ns, Digest: r.PostFormValue("digest")}
	if r.PostFormValue("decision") == "deny" {
		o.Deny, o.Reason = true, strings.TrimSpace(r.PostFormValue("reason"))
	}
	var out bytes.Buffer
	o.Out = &out
	err := cli.Approve(r.Context(), s.client, o)
	back := "/approvals"
	if r.PostFormValue("from") == "installation" {
		back = "/installations/" + ns + "/" + name
	}
	if err != nil {
		verb := "Not approved: "
		if o.Deny {
			verb = "Not denied: "
		}
		s.redirect(w, r, back, verb+err.Error(), true)
		return
	}
	s.redirect(w, r, back, lastLine(out.String()), false)
}

// lastLine is the last non-empty line of cli.Approve's output: what it
// did (the lines before repeat the change the page shows).
func lastLine(s string) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	return string(lines[len(lines)-1])
}
