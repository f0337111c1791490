// Package adopt is the pure core of adopting what another tool installed:
// it reads a Helm release as Helm 3 and 4 store it (a Secret or a
// ConfigMap per revision), picks the revision to adopt, and compares
// what Annex renders with the objects that run. It reads and writes
// nothing itself: the caller lists the storage objects and reads the live
// objects, and passes them in.
package adopt

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Helm's storage conventions (helm.sh/helm/v4/pkg/storage/driver), the
// same in Helm 3 and 4 and in Flux's helm-controller, which uses them.
const (
	// SecretType is the type of a release's storage Secret.
	SecretType corev1.SecretType = "helm.sh/release.v1"
	// LabelOwner is "helm" on every storage object.
	LabelOwner = "owner"
	// LabelName is the release name.
	LabelName = "name"
	// LabelStatus is the revision's status.
	LabelStatus = "status"
	// LabelVersion is the revision number.
	LabelVersion = "version"
	// Owner is the value of LabelOwner.
	Owner = "helm"
	// payloadKey holds base64 of gzip of the release JSON.
	payloadKey = "release"
)

// Statuses of a revision, as Helm writes them.
const (
	StatusDeployed        = "deployed"
	StatusSuperseded      = "superseded"
	StatusFailed          = "failed"
	StatusUninstalled     = "uninstalled"
	StatusUninstalling    = "uninstalling"
	StatusPendingInstall  = "pending-install"
	StatusPendingUpgrade  = "pending-upgrade"
	StatusPendingRollback = "pending-rollback"
)

// maxReleaseBytes bounds the decompressed release JSON: Helm's own
// storage holds at most 1 MiB compressed, and a release compresses at
// most about tenfold in practice.
const maxReleaseBytes = 64 << 20

// StorageName is the name of the Secret or ConfigMap holding revision
// revision of release name.
func StorageName(name string, revision int) string {
	return "sh.helm.release.v1." + name + ".v" + strconv.Itoa(revision)
}

// Release is one revision of a Helm release.
type Release struct {
	Name      string
	Namespace string
	Revision  int
	Status    string
	// Chart, ChartVersion and AppVersion come from the chart's Chart.yaml
	// as the release recorded it.
	Chart, ChartVersion, AppVersion string
	// Values are the user-supplied values (helm get values), not the
	// chart's defaults; nil when none were given.
	Values map[string]any
	// Manifest is the rendered manifest Helm applied, hooks excluded.
	Manifest string
	// Hooks counts the release's hooks.
	Hooks int
	// Storage names the object it was read from, e.g.
	// "Secret team-a/sh.helm.release.v1.web.v2".
	Storage string
	// StorageNamespace is the namespace of that object, the one helm's -n
	// names. It is Namespace unless the release was stored elsewhere
	// (Flux's helm-controller with spec.storageNamespace).
	StorageNamespace string
}

// stored is the part of Helm's release JSON (helm.sh/helm/v4/pkg/release/v1
// Release) that adoption reads.
type stored struct {
	Name string `json:"name"`
	Info *struct {
		Status string `json:"status"`
	} `json:"info"`
	Chart *struct {
		Metadata *struct {
			Name       string `json:"name"`
			Version    string `json:"version"`
			AppVersion string `json:"appVersion"`
		} `json:"metadata"`
	} `json:"chart"`
	Config    map[string]any    `json:"config"`
	Manifest  string            `json:"manifest"`
	Hooks     []json.RawMessage `json:"hooks"`
	Version   int               `json:"version"`
	Namespace string            `json:"namespace"`
}

// Decode reads a release payload as Helm stores it: base64 of the gzip of
// the release JSON (or, as releases written before Helm compressed them,
// base64 of the JSON itself). The error says which layer is broken.
func Decode(payload []byte) (*Release, error) {
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(payload)))
	n, err := base64.StdEncoding.Decode(raw, bytes.TrimSpace(payload))
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	raw = raw[:n]
	if len(raw) > 3 && bytes.Equal(raw[:3], []byte{0x1f, 0x8b, 0x08}) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("not gzip: %w", err)
		}
		raw, err = io.ReadAll(io.LimitReader(zr, maxReleaseBytes+1))
		if err != nil {
			return nil, fmt.Errorf("not gzip: %w", err)
		}
		if len(raw) > maxReleaseBytes {
			return nil, fmt.Errorf("release JSON is larger than %d MiB", maxReleaseBytes>>20)
		}
	}
	var s stored
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a Helm release (JSON): %w", err)
	}
	if s.Name == "" || s.Version <= 0 || s.Info == nil || s.Chart == nil || s.Chart.Metadata == nil {
		return nil, errors.New("not a Helm release: name, version, info or chart.metadata is missing")
	}
	return &Release{
		Name: s.Name, Namespace: s.Namespace, Revision: s.Version, Status: s.Info.Status,
		Chart: s.Chart.Metadata.Name, ChartVersion: s.Chart.Metadata.Version, AppVersion: s.Chart.Metadata.AppVersion,
		Values: s.Config, Manifest: s.Manifest, Hooks: len(s.Hooks),
	}, nil
}

// IsStorage reports whether labels and name are those of Helm release
// storage (owner=helm, and the sh.helm.release.v1. name prefix).
func IsStorage(name string, labels map[string]string) bool {
	return labels[LabelOwner] == Owner && strings.HasPrefix(name, "sh.helm.release.v1.")
}

// DecodeSecret reads a release revision from Helm's Secret storage
// driver. The error names the Secret.
func DecodeSecret(s *corev1.Secret) (*Release, error) {
	where := "Secret " + s.Namespace + "/" + s.Name
	if s.Type != SecretType {
		return nil, fmt.Errorf("%s: type is %q, not %q: it is not Helm release storage", where, s.Type, SecretType)
	}
	return decodeStorage(where, s.Namespace, s.Labels, s.Data[payloadKey])
}

// DecodeConfigMap reads a release revision from Helm's ConfigMap storage
// driver (HELM_DRIVER=configmap). The error names the ConfigMap.
func DecodeConfigMap(cm *corev1.ConfigMap) (*Release, error) {
	where := "ConfigMap " + cm.Namespace + "/" + cm.Name
	return decodeStorage(where, cm.Namespace, cm.Labels, []byte(cm.Data[payloadKey]))
}

func decodeStorage(where, namespace string, labels map[string]string, payload []byte) (*Release, error) {
	if len(payload) == 0 {
		return nil, fmt.Errorf("%s: key %q is empty: it is not Helm release storage", where, payloadKey)
	}
	r, err := Decode(payload)
	if err != nil {
		return nil, fmt.Errorf("%s: key %q: %w", where, payloadKey, err)
	}
	if r.Namespace == "" {
		r.Namespace = namespace
	}
	// Helm updates the status label with the payload; when they disagree
	// (a write cut short), the label is what `helm list` shows.
	if st := labels[LabelStatus]; st != "" {
		r.Status = st
	}
	r.Storage, r.StorageNamespace = where, namespace
	return r, nil
}

// PendingError refuses a release whose latest revision is pending: a Helm
// operation is running on it, or died half way. Fix says what to do.
type PendingError struct {
	Release  string
	Revision *Release
	// Deployed is the revision still deployed, or nil.
	Deployed *Release
	// Driver is "secret" or "configmap", for the command in Fix.
	Driver string
}

func (e *PendingError) Error() string {
	r := e.Revision
	return fmt.Sprintf("Helm release %s/%s: its latest revision %d is %s (%s): a helm install, upgrade or rollback is running on it, or stopped half way; %s",
		r.Namespace, r.Name, r.Revision, r.Status, r.Storage, e.Fix())
}

// Fix is what to do, as commands to run, when no Helm operation is
// running on the release any more.
func (e *PendingError) Fix() string {
	r := e.Revision
	kind := "secret"
	if e.Driver == "configmap" {
		kind = "configmap"
	}
	ns := r.StorageNamespace
	if ns == "" {
		ns = r.Namespace
	}
	drop := fmt.Sprintf("kubectl delete %s %s -n %s", kind, StorageName(r.Name, r.Revision), ns)
	if e.Deployed == nil {
		return fmt.Sprintf("if none is running any more, delete the pending revision (%s) and install the chart again with helm before adopting it, or run helm uninstall %s -n %s",
			drop, r.Name, ns)
	}
	return fmt.Sprintf("if none is running any more, either delete the pending revision so that revision %d is the release again (%s), or roll back to it (helm rollback %s %d -n %s, which applies revision %d again as revision %d); then adopt again",
		e.Deployed.Revision, drop, r.Name, e.Deployed.Revision, ns, e.Deployed.Revision, r.Revision+1)
}

// NotDeployedError refuses a release that has no deployed revision
// (every revision failed, or it was uninstalled with --keep-history).
type NotDeployedError struct {
	Name, Namespace string
	// Latest is the newest revision.
	Latest *Release
}

func (e *NotDeployedError) Error() string {
	l := e.Latest
	return fmt.Sprintf("Helm release %s/%s has no deployed revision (the latest, %d, is %s): there is nothing running to adopt; fix it with helm (helm upgrade %s CHART -n %s until it is deployed) or install it with annexctl install",
		e.Namespace, e.Name, l.Revision, l.Status, e.Name, e.Namespace)
}

// Deployed picks the revision to adopt among every revision of one
// release: the highest revision whose status is deployed. It refuses, with
// a *PendingError, a release whose latest revision is pending (whatever
// is deployed), and, with a *NotDeployedError, one with no deployed
// revision. driver is "secret" or "configmap", for the fix a
// PendingError offers. revisions must not be empty.
func Deployed(revisions []*Release, driver string) (*Release, error) {
	if len(revisions) == 0 {
		return nil, errors.New("no revisions")
	}
	sorted := slices.Clone(revisions)
	slices.SortFunc(sorted, func(a, b *Release) int { return b.Revision - a.Revision })
	var deployed *Release
	for _, r := range sorted {
		if r.Status == StatusDeployed {
			deployed = r
			break
		}
	}
	if latest := sorted[0]; strings.HasPrefix(latest.Status, "pending-") {
		return nil, &PendingError{Release: latest.Name, Revision: latest, Deployed: deployed, Driver: driver}
	}
	if deployed == nil {
		return nil, &NotDeployedError{Name: sorted[0].Name, Namespace: sorted[0].Namespace, Latest: sorted[0]}
	}
	return deployed, nil
}
