package console

import (
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/internal/cli"
)

// fleetView is the clusters page and the installations page: the status
// tree of annexctl status, read from the informers (three LISTs of the
// cache, no request to the API server).
type fleetView struct {
	Tree *cli.StatusTree
	// Filter is what the installations page was asked for.
	Filter fleetFilter
	// Shown counts the installations listed after the filter.
	Shown int
	// ClusterNames are the ManagedClusters, for the cluster filter.
	ClusterNames []string
	// Problems are the installations that are not Ready, per cluster
	// name, at most problemLimit each.
	Problems map[string][]cli.InstallationStatus
}

// fleetFilter narrows the installations page.
type fleetFilter struct {
	Cluster string
	// Text matches namespace/name or extension.
	Text string
	// NotReady keeps the installations that are not Ready.
	NotReady bool
}

const problemLimit = 10

func (s *Server) fleet(w http.ResponseWriter, r *http.Request, f cli.StatusFilter) (*cli.StatusTree, bool) {
	tree, err := cli.Status(r.Context(), s.client, f)
	if err != nil {
		s.fail(w, r, "Installations", err)
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

func (s *Server) clustersPage(w http.ResponseWriter, r *http.Request) {
	tree, ok := s.fleet(w, r, cli.StatusFilter{})
	if !ok {
		return
	}
	v := fleetView{Tree: tree, Problems: map[string][]cli.InstallationStatus{}}
	for _, c := range tree.Clusters {
		for _, in := range c.Installations {
			if in.Ready != metav1.ConditionTrue && len(v.Problems[c.Name]) < problemLimit {
				v.Problems[c.Name] = append(v.Problems[c.Name], in)
			}
		}
	}
	s.render(w, r, http.StatusOK, "clusters", &page{Title: "Clusters", Nav: "clusters", Live: true, Data: v})
}

func (s *Server) installationsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := fleetFilter{Cluster: q.Get("cluster"), Text: strings.TrimSpace(q.Get("q")), NotReady: q.Get("notready") != ""}
	tree, ok := s.fleet(w, r, cli.StatusFilter{Cluster: f.Cluster})
	if !ok {
		return
	}
	v := fleetView{Tree: tree, Filter: f}
	v.ClusterNames, _ = cli.ClusterNames(r.Context(), s.client)
	text := strings.ToLower(f.Text)
	for i := range tree.Clusters {
		c := &tree.Clusters[i]
		kept := c.Installations[:0]
		for _, in := range c.Installations {
			if f.NotReady && in.Ready == metav1.ConditionTrue {
				continue
			}
			if text != "" && !strings.Contains(strings.ToLower(in.Namespace+"/"+in.Name+" "+in.Extension), text) {
				continue
			}
			kept = append(kept, in)
		}
		c.Installations = kept
		v.Shown += len(kept)
	}
	s.render(w, r, http.StatusOK, "installations", &page{Title: "Installations", Nav: "installations", Live: true, Data: v})
}
