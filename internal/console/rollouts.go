package console

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"

	"github.com/annex-platform/annex/internal/cli"
)

// The Rollouts pages show each profile's rollout from the profile alone
// (spec.rollout and status.rollout, read from the informer): however
// many clusters a profile selects, no cluster and no installation is
// listed. Their buttons do what `annexctl rollout` does, with the same
// functions, as the user.

// rolloutsView is the Rollouts page: every profile's rollout.
type rolloutsView struct {
	Rollouts []cli.RolloutView
}

func (s *Server) rolloutsPage(w http.ResponseWriter, r *http.Request) {
	rs, err := cli.Rollouts(r.Context(), s.client)
	if err != nil {
		s.fail(w, r, "Rollouts", err)
		return
	}
	s.render(w, r, http.StatusOK, "rollouts", &page{Title: "Rollouts", Nav: "rollouts", Live: true, Data: rolloutsView{Rollouts: rs}})
}

func (s *Server) rolloutPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("profile")
	d, err := cli.DescribeRollout(r.Context(), s.client, name)
	if err != nil {
		s.fail(w, r, "Rollout of "+name, err)
		return
	}
	s.render(w, r, http.StatusOK, "rollout", &page{Title: "Rollout of " + name, Nav: "rollouts", Live: true, LiveKey: profileKey(name), Data: d})
}

// rolloutAction does what the form's button says — approve, pause,
// resume or undo — as `annexctl rollout` does, reading the profile from
// the API server (not the informer, which may lag behind), and goes back
// to the profile's page with what happened. Approve and undo act on the step,
// revision and target revision the page showed (posted with the form),
// not on what the rollout may have moved to since.
func (s *Server) rolloutAction(w http.ResponseWriter, r *http.Request) {
	name, action := r.PathValue("profile"), r.PathValue("action")
	back := "/rollouts/" + url.PathEscape(name)
	var out bytes.Buffer
	var err error
	switch action {
	case "approve":
		o := cli.RolloutApproveOptions{Profile: name, Step: r.PostFormValue("step"), Out: &out}
		if o.Revision, err = formRevision(r, "revision"); err == nil {
			err = cli.ApproveRolloutStep(r.Context(), s.direct, o)
		}
	case "pause", "resume":
		err = cli.SetRolloutPaused(r.Context(), s.direct, name, action == "pause", &out)
	case "undo":
		o := cli.RolloutUndoOptions{Profile: name, Out: &out}
		if o.ToRevision, err = formRevision(r, "to"); err == nil {
			_, err = cli.UndoRollout(r.Context(), s.direct, o)
		}
	default:
		s.fail(w, r, "Rollout of "+name, notFound("no rollout action "+strconv.Quote(action)+": the buttons are approve, pause, resume and undo"))
		return
	}
	if err != nil {
		s.redirect(w, r, back, "Not done: "+err.Error(), true)
		return
	}
	s.redirect(w, r, back, lastLine(out.String()), false)
}

// formRevision reads a revision number from the form (0 when empty).
func formRevision(r *http.Request, field string) (int64, error) {
	v := r.PostFormValue(field)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, cli.Usagef("the form's %s %q is not a revision number: reload the page and submit it again", field, v)
	}
	return n, nil
}
