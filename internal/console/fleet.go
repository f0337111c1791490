package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/internal/cli"
)

// fleetView is the clusters page and the installations page: the status
// tree of annexctl status, read from the informers (three LISTs of the
// cache, no request to the API server), narrowed by fleetFilter and cut
// into pages.
type fleetView struct {
	// Tree lists the page's clusters; Tree.Summary counts every cluster
	// the selector picks.
	Tree *cli.StatusTree
	// Filter is what the page was asked for.
	Filter fleetFilter
	// Error says which parameter the page could not read; nothing else is
	// shown then but the form.
	Error string
	// Page is the page shown: of clusters on the clusters page, of
	// installations on the installations page. PrevURL and NextURL keep
	// the filters ("" when there is no such page).
	Page             cli.Page
	PrevURL, NextURL string
	// ClusterNames are the ManagedClusters, for the cluster filter.
	ClusterNames []string
	// Problems are the installations that are not Ready, per cluster
	// name, at most problemLimit each.
	Problems map[string][]cli.InstallationStatus
	// States are the values of the state filter.
	States []cli.ClusterState
	// path and query are the page's, for the links that change a filter.
	path  string
	query url.Values
}

// StateURL is the page with the state filter set to state ("" for every
// state), the other filters kept, from the first page.
func (v fleetView) StateURL(state string) string {
	q := url.Values{}
	for k, vs := range v.query {
		if k != "flash" && k != "page" && k != "state" {
			q[k] = vs
		}
	}
	if state != "" {
		q.Set("state", state)
	}
	if len(q) == 0 {
		return v.path
	}
	return v.path + "?" + q.Encode()
}

// fleetFilter is what the pages are asked for in their query.
type fleetFilter struct {
	// Selector and State pick clusters (both pages): a label selector on
	// the ManagedClusters' labels and a cli.ClusterState, as typed.
	Selector string
	State    string
	// Cluster, Text and NotReady narrow the installations page: one
	// cluster, a text in namespace/name or extension, and the
	// installations that are not Ready.
	Cluster  string
	Text     string
	NotReady bool
	// Page counts from 1; Limit is the rows a page holds.
	Page, Limit int
}

// LimitSet reports whether the page was asked for a limit other than
// the default, which the filter form then keeps.
func (f fleetFilter) LimitSet() bool { return f.Limit != defaultLimit }

const (
	problemLimit = 10
	// defaultLimit and maxLimit bound the rows of a page: a page of
	// 1,000 clusters or installations is too long to read and to render
	// on every change.
	defaultLimit = 100
	maxLimit     = 500
)

// parseFleetFilter reads the query of the clusters and installations
// pages. The error names the parameter and says what it takes.
func parseFleetFilter(q url.Values) (fleetFilter, cli.FleetQuery, error) {
	f := fleetFilter{
		Selector: strings.TrimSpace(q.Get("selector")), State: strings.TrimSpace(q.Get("state")),
		Cluster: q.Get("cluster"), Text: strings.TrimSpace(q.Get("q")), NotReady: q.Get("notready") != "",
		Page: 1, Limit: defaultLimit,
	}
	var fq cli.FleetQuery
	var err error
	if fq.Selector, err = cli.ParseSelector(f.Selector); err != nil {
		return f, fq, fmt.Errorf("selector: %w", err)
	}
	if fq.States, err = cli.ParseClusterStates(f.State); err != nil {
		return f, fq, fmt.Errorf("state: %w", err)
	}
	if s := q.Get("page"); s != "" {
		if f.Page, err = strconv.Atoi(s); err != nil || f.Page < 1 {
			return f, fq, fmt.Errorf("page=%q: give a page number from 1", s)
		}
	}
	if s := q.Get("limit"); s != "" {
		if f.Limit, err = strconv.Atoi(s); err != nil || f.Limit < 1 {
			return f, fq, fmt.Errorf("limit=%q: give the number of rows a page shows, from 1 to %d", s, maxLimit)
		}
		f.Limit = min(f.Limit, maxLimit)
	}
	fq.NotReady, fq.Match = f.NotReady, f.Text
	return f, fq, nil
}

// pageURL is path with query q (minus a flash) asking for page number;
// "" when number is 0 (no such page).
func pageURL(path string, q url.Values, number int) string {
	if number == 0 {
		return ""
	}
	v := url.Values{}
	for k, vs := range q {
		if k != "flash" {
			v[k] = vs
		}
	}
	v.Set("page", strconv.Itoa(number))
	return path + "?" + v.Encode()
}

func (s *Server) fleet(w http.ResponseWriter, r *http.Request, title string, f cli.StatusFilter) (*cli.StatusTree, bool) {
	tree, err := cli.Status(r.Context(), s.client, f)
	if err != nil {
		s.fail(w, r, title, err)
		return nil, false
	}
	for i := range tree.Clusters {
		c := &tree.Clusters[i]
		if c.Hub {
			if v, err := s.hubKubeVersion(); err == nil {
				c.KubernetesVersion = v
				c.Reachable = metav1.ConditionTrue
			} else {
				c.Reachable, c.Message = metav1.ConditionFalse, err.Error()
			}
		}
	}
	return tree, true
}

// clustersPage lists the clusters the selector and state pick, those
// that need a person first, a page at a time, under a summary of every
// cluster the selector picks.
func (s *Server) clustersPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, fq, err := parseFleetFilter(q)
	p := &page{Title: "Clusters", Nav: "clusters", Live: true}
	if err != nil {
		p.Data = fleetView{Filter: f, Error: err.Error(), States: cli.ClusterStates, path: "/clusters", query: q}
		s.render(w, r, http.StatusBadRequest, "clusters", p)
		return
	}
	tree, ok := s.fleet(w, r, "Clusters", cli.StatusFilter{})
	if !ok {
		return
	}
	fq.NotReady, fq.Match = false, "" // installation filters, of the installations page
	tree = cli.NarrowFleet(tree, fq)
	pg := cli.PageOf(len(tree.Clusters), f.Page, f.Limit)
	tree.Clusters = tree.Clusters[pg.Start:pg.End]
	v := fleetView{Tree: tree, Filter: f, Page: pg, States: cli.ClusterStates,
		PrevURL: pageURL("/clusters", q, pg.Prev()), NextURL: pageURL("/clusters", q, pg.Next()),
		Problems: map[string][]cli.InstallationStatus{}, path: "/clusters", query: q}
	for _, c := range tree.Clusters {
		for _, in := range c.Installations {
			if in.Ready != metav1.ConditionTrue && len(v.Problems[c.Name]) < problemLimit {
				v.Problems[c.Name] = append(v.Problems[c.Name], in)
			}
		}
	}
	p.Data = v
	s.render(w, r, http.StatusOK, "clusters", p)
}

// installationsPage lists the installations on the clusters the selector
// and state pick, narrowed by cluster, text and readiness, those that
// are not Ready first, a page of installations at a time.
func (s *Server) installationsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, fq, err := parseFleetFilter(q)
	p := &page{Title: "Installations", Nav: "installations", Live: true}
	names, _ := cli.ClusterNames(r.Context(), s.client)
	if err != nil {
		p.Data = fleetView{Filter: f, Error: err.Error(), States: cli.ClusterStates, ClusterNames: names, path: "/installations", query: q}
		s.render(w, r, http.StatusBadRequest, "installations", p)
		return
	}
	tree, ok := s.fleet(w, r, "Installations", cli.StatusFilter{Cluster: f.Cluster})
	if !ok {
		return
	}
	tree = cli.NarrowFleet(tree, fq)
	pg := cli.PageOf(cli.CountInstallations(tree.Clusters), f.Page, f.Limit)
	tree.Clusters = cli.PageInstallations(tree.Clusters, pg)
	v := fleetView{Tree: tree, Filter: f, Page: pg, States: cli.ClusterStates, ClusterNames: names,
		PrevURL: pageURL("/installations", q, pg.Prev()), NextURL: pageURL("/installations", q, pg.Next()),
		path: "/installations", query: q}
	p.Data = v
	s.render(w, r, http.StatusOK, "installations", p)
}
