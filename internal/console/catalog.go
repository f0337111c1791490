package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/resolve"
)

// catalogView is the catalog page: a search and what it found.
type catalogView struct {
	Query    string
	Matches  []cli.ExtensionMatch
	Catalogs []cli.CatalogInfo
	// CatalogsError says why the catalogs cannot be listed (RBAC).
	CatalogsError string
}

func (s *Server) catalogPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	matches, err := cli.Search(r.Context(), s.client, q)
	if err != nil {
		s.fail(w, r, "Catalog", err)
		return
	}
	v := catalogView{Query: q, Matches: matches}
	if v.Catalogs, err = cli.ListCatalogs(r.Context(), s.client); err != nil {
		v.CatalogsError = err.Error()
	}
	s.render(w, r, http.StatusOK, "catalog", &page{Title: "Catalog", Nav: "catalog", Data: v})
}

// extensionView is an extension's page: its versions against each
// cluster's Kubernetes version, the chosen version's dependencies and
// values, and the install form for it.
type extensionView struct {
	Detail *cli.ExtensionDetail
	// Clusters are the columns of the compatibility table.
	Clusters []clusterColumn
	// Rows are the versions, highest first, each with a cell per cluster.
	Rows []versionRow
	// Version is the version the page shows in detail and installs.
	Version cli.VersionDetail
	Form    installForm
}

type clusterColumn struct {
	// Name is the ManagedCluster's, or "" for the hub; Label is shown.
	Name, Label string
	// KubeVersion is what the cluster runs ("" when not known).
	KubeVersion string
}

type versionRow struct {
	cli.VersionDetail
	Cells []compatCell
}

// compatCell says whether a version can run on a cluster.
type compatCell struct {
	// Fits is "yes", "no" or "unknown" (the cluster's version is not known).
	Fits string
	Text string
}

// installForm is the install form, as first shown or as submitted.
type installForm struct {
	Name, Namespace, Cluster, Version, TargetNamespace string
	// SchemaVersion is the version whose values schema made Fields.
	SchemaVersion string
	Fields        []Field
	// SchemaError says why the schema gives no inputs.
	SchemaError string
	// OtherValues is the YAML box; OtherValuesError its problem.
	OtherValues, OtherValuesError string
	// Error is what the API server or Annex said when installing failed.
	Error string
}

func (s *Server) extensionPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.extensionView(r, r.PathValue("name"), r.URL.Query().Get("version"))
	if err != nil {
		s.fail(w, r, "Extension "+r.PathValue("name"), err)
		return
	}
	v.Form.Name, v.Form.Namespace = v.Detail.Name, "default"
	if r.URL.Query().Get("version") != "" {
		v.Form.Version = v.Version.Version
	}
	s.render(w, r, http.StatusOK, "extension", &page{Title: displayName(v.Detail), Nav: "catalog", Data: v})
}

func displayName(d *cli.ExtensionDetail) string {
	if d.DisplayName != "" && d.DisplayName != d.Name {
		return d.DisplayName + " (" + d.Name + ")"
	}
	return d.Name
}

// extensionView reads the Extension (from the informer) and the clusters,
// and builds the page for version ("" is the latest that is not
// deprecated). When the manager has not read that version's values
// (values.schema.json and values.yaml, which a Helm repository's index
// does not carry) the page asks it to and waits for the answer, at most
// Options.ValuesWait: the install form then has fields for a chart that
// ships a schema, each with the chart's default as its placeholder.
func (s *Server) extensionView(r *http.Request, name, version string) (*extensionView, error) {
	ext := &v1alpha1.Extension{}
	if err := s.client.Get(r.Context(), client.ObjectKey{Name: name}, ext); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notFound(fmt.Sprintf("no catalog offers an extension %q; search the catalog for it", name))
		}
		return nil, err
	}
	if len(ext.Spec.Versions) == 0 {
		return nil, fmt.Errorf("extension %q has no versions", name)
	}
	chosen := -1
	for i, ev := range ext.Spec.Versions {
		if ev.Version == version || (version == "" && chosen < 0 && !ev.Deprecated) {
			chosen = i
		}
	}
	if chosen < 0 {
		if version != "" {
			return nil, notFound(fmt.Sprintf("extension %q has no version %s; its page lists the versions it has", name, version))
		}
		chosen = 0
	}
	ext, note := cli.AskValues(r.Context(), s.client, ext, ext.Spec.Versions[chosen].Version, s.valuesWait)
	v := &extensionView{Detail: cli.DetailOf(ext)}
	v.Clusters = s.clusterColumns(r)
	for _, vd := range v.Detail.Versions {
		row := versionRow{VersionDetail: vd}
		for _, c := range v.Clusters {
			row.Cells = append(row.Cells, compatibility(vd.KubeVersion, c.KubeVersion))
		}
		v.Rows = append(v.Rows, row)
	}
	v.Version = v.Detail.Versions[chosen]
	if note != "" {
		v.Version.ValuesNote = note
	}
	v.Form.SchemaVersion = v.Version.Version
	if schema, defaults := cli.ValuesOf(ext, v.Version.Version); schema != nil {
		fields, err := FormFields(schema, defaults)
		if err != nil {
			v.Form.SchemaError = err.Error()
		}
		v.Form.Fields = fields
	}
	return v, nil
}

// clusterColumns are the hub and every ManagedCluster the user may see.
func (s *Server) clusterColumns(r *http.Request) []clusterColumn {
	hub := clusterColumn{Label: cli.HubCluster}
	hub.KubeVersion, _ = s.hubKubeVersion()
	cols := []clusterColumn{hub}
	var list v1alpha1.ManagedClusterList
	if err := s.client.List(r.Context(), &list); err == nil {
		for _, mc := range list.Items {
			cols = append(cols, clusterColumn{Name: mc.Name, Label: mc.Name, KubeVersion: mc.Status.KubernetesVersion})
		}
	}
	return cols
}

// compatibility says whether a version whose kubeVersion range is
// kubeRange runs on a cluster of Kubernetes clusterVersion.
func compatibility(kubeRange, clusterVersion string) compatCell {
	if clusterVersion == "" {
		return compatCell{Fits: "unknown", Text: "cluster version not known"}
	}
	cv, err := resolve.ParseClusterVersion(clusterVersion)
	if err != nil {
		return compatCell{Fits: "unknown", Text: err.Error()}
	}
	if resolve.KubeVersionAllows(kubeRange, cv) {
		return compatCell{Fits: "yes", Text: "fits " + clusterVersion}
	}
	return compatCell{Fits: "no", Text: fmt.Sprintf("needs Kubernetes %s, cluster runs %s", kubeRange, clusterVersion)}
}

// install creates an ExtensionInstallation from the install form, as the
// user, through cli.Install, and sends the browser to its page. A value
// that cannot be read, or an installation the API server or cli.Install
// refuses, shows the form again with what was entered and why.
func (s *Server) install(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	form := r.PostForm
	v, err := s.extensionView(r, name, form.Get("schemaVersion"))
	if err != nil {
		s.fail(w, r, "Install "+name, err)
		return
	}
	f := &v.Form
	f.Name, f.Namespace = strings.TrimSpace(form.Get("name")), strings.TrimSpace(form.Get("namespace"))
	f.Cluster, f.Version = form.Get("cluster"), strings.TrimSpace(form.Get("version"))
	f.TargetNamespace, f.OtherValues = strings.TrimSpace(form.Get("targetNamespace")), form.Get("values")
	values, filled, yamlErr := ValuesFromForm(f.Fields, form)
	f.Fields, f.OtherValuesError = filled, yamlErr
	if values == nil {
		f.Error = "some values cannot be read; see the fields marked below"
		s.render(w, r, http.StatusUnprocessableEntity, "extension", &page{Title: displayName(v.Detail), Nav: "catalog", Data: v})
		return
	}
	doc, err := json.Marshal(values)
	if err != nil {
		s.fail(w, r, "Install "+name, err)
		return
	}
	inst, err := cli.Install(r.Context(), s.client, cli.InstallOptions{
		Extension: name, Name: f.Name, Namespace: f.Namespace, Version: f.Version,
		Cluster: f.Cluster, TargetNamespace: f.TargetNamespace, Values: [][]byte{doc},
	})
	if err != nil {
		status := http.StatusUnprocessableEntity
		if apierrors.IsForbidden(err) {
			status = http.StatusForbidden
		}
		f.Error = err.Error()
		s.render(w, r, status, "extension", &page{Title: displayName(v.Detail), Nav: "catalog", Data: v})
		return
	}
	// The installation's page reads the informer: wait (briefly) until it
	// has the new object, so that the page does not say it does not exist.
	s.waitCached(r.Context(), client.ObjectKeyFromObject(inst), &v1alpha1.ExtensionInstallation{})
	s.redirect(w, r, "/installations/"+inst.Namespace+"/"+inst.Name,
		fmt.Sprintf("Created ExtensionInstallation %s/%s as %s; Annex resolves and installs it now.", inst.Namespace, inst.Name, s.user), false)
}

// waitCached waits up to five seconds until the informers have the
// object key names; after that the page shows what they have.
func (s *Server) waitCached(ctx context.Context, key client.ObjectKey, obj client.Object) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for s.client.Get(ctx, key, obj) != nil && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}
