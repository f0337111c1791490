package cli

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// CatalogInfo is one Catalog as annexctl and the console show it.
type CatalogInfo struct {
	Name string `json:"name"`
	// Kind is helm, oci, directory, builtin or olm; Source its URL,
	// repository, path or image ("" for builtin).
	Kind   string `json:"kind"`
	Source string `json:"source,omitempty"`
	// Ready is the status of the Ready condition (Unknown before the
	// first sync); Reason and Message are its reason and message.
	Ready   metav1.ConditionStatus `json:"ready"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`
	// Extensions is how many Extensions the catalog supplies.
	Extensions int32 `json:"extensions"`
	Priority   int32 `json:"priority"`
	Suspended  bool  `json:"suspended,omitempty"`
	// Interval is the time between two syncs.
	Interval string `json:"interval,omitempty"`
	// LastChange is when the synced content last changed.
	LastChange *time.Time `json:"lastChange,omitempty"`
	Created    time.Time  `json:"created"`
}

// ListCatalogs lists every Catalog (one LIST), sorted by name.
func ListCatalogs(ctx context.Context, c client.Reader) ([]CatalogInfo, error) {
	var list v1alpha1.CatalogList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing Catalogs: %w", err)
	}
	out := make([]CatalogInfo, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, CatalogInfoOf(&list.Items[i]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CatalogInfoOf is the view of one Catalog.
func CatalogInfoOf(cat *v1alpha1.Catalog) CatalogInfo {
	info := CatalogInfo{
		Name: cat.Name, Ready: metav1.ConditionUnknown,
		Extensions: cat.Status.ExtensionCount, Priority: cat.Spec.Priority, Suspended: cat.Spec.Suspend,
		Created: cat.CreationTimestamp.Time,
	}
	info.Kind, info.Source = sourceOf(cat.Spec.Source)
	if cat.Spec.Interval.Duration > 0 {
		info.Interval = cat.Spec.Interval.Duration.String()
	}
	if t := cat.Status.LastChangeTime; t != nil {
		tt := t.Time
		info.LastChange = &tt
	}
	if c := meta.FindStatusCondition(cat.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		info.Ready, info.Reason, info.Message = c.Status, c.Reason, c.Message
	}
	return info
}

func sourceOf(s v1alpha1.CatalogSource) (kind, source string) {
	switch {
	case s.Helm != nil:
		return "helm", s.Helm.URL
	case s.OCI != nil:
		return "oci", s.OCI.Repository
	case s.Directory != nil:
		return "directory", s.Directory.Path
	case s.Builtin != nil:
		return "builtin", ""
	case s.OLM != nil:
		return "olm", s.OLM.URL + s.OLM.Path + s.OLM.Image
	}
	return "", ""
}

// CatalogOptions describe a Catalog to add.
type CatalogOptions struct {
	// Name of the Catalog.
	Name string
	// Source says where it reads from: an http(s):// URL (a Helm
	// repository), oci://registry/repository (Helm charts in a
	// registry), an absolute path (a folder of charts on the manager's
	// disk) or "builtin". With OLM, the URL, path or an image reference
	// is an OLM File-Based Catalog instead.
	Source string
	OLM    bool
	// Secret is "namespace/name" of a Secret with credentials.
	Secret string
	// Insecure allows sending credentials over plain http.
	Insecure bool
	// Interval between syncs; 0 keeps the default (10m).
	Interval time.Duration
	Priority int32
	Suspend  bool
	// VerifyKeys are files holding PEM public keys (a .pub of annexctl
	// package keygen, cosign.pub). With any, the Catalog verifies cosign
	// signatures: spec.verify trusts them inline, each named after its
	// file (release-2026.pub: key "release-2026"). Only an oci:// source
	// takes them.
	VerifyKeys []string
	// VerifyMode is what happens to an artifact none of VerifyKeys
	// signed: Enforce (refused; the default) or Audit (installed and
	// reported). It needs VerifyKeys.
	VerifyMode string
}

// CatalogFor builds the Catalog o describes, without writing it. Errors
// name the argument and the forms it takes.
func CatalogFor(o CatalogOptions) (*v1alpha1.Catalog, error) {
	if o.Name == "" {
		return nil, Usagef("a catalog needs a name: annexctl catalog add NAME SOURCE")
	}
	cat := &v1alpha1.Catalog{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Catalog"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Spec:       v1alpha1.CatalogSpec{Priority: o.Priority, Suspend: o.Suspend},
	}
	if o.Interval > 0 {
		cat.Spec.Interval = metav1.Duration{Duration: o.Interval}
	}
	var secret *v1alpha1.SecretReference
	if o.Secret != "" {
		ns, name, ok := strings.Cut(o.Secret, "/")
		if !ok || ns == "" || name == "" {
			return nil, Usagef("--secret %q: use NAMESPACE/NAME of a Secret with the credentials", o.Secret)
		}
		secret = &v1alpha1.SecretReference{Namespace: ns, Name: name}
	}
	src, s := o.Source, &cat.Spec.Source
	web := strings.HasPrefix(src, "https://") || strings.HasPrefix(src, "http://")
	switch {
	case o.OLM && web:
		s.OLM = &v1alpha1.OLMSource{URL: src, SecretRef: secret, Insecure: o.Insecure}
	case o.OLM && path.IsAbs(src):
		s.OLM = &v1alpha1.OLMSource{Path: src}
	case o.OLM && src != "" && !strings.Contains(src, "://"):
		s.OLM = &v1alpha1.OLMSource{Image: src, SecretRef: secret, Insecure: o.Insecure}
	case web:
		s.Helm = &v1alpha1.HelmSource{URL: src, SecretRef: secret, Insecure: o.Insecure}
	case strings.HasPrefix(src, "oci://"):
		s.OCI = &v1alpha1.OCISource{Repository: src, SecretRef: secret}
	case path.IsAbs(src):
		s.Directory = &v1alpha1.DirectorySource{Path: src}
	case src == "builtin":
		s.Builtin = &v1alpha1.BuiltinSource{}
	default:
		return nil, Usagef("source %q of catalog %q: use an https:// Helm repository, oci://registry/repository, an absolute path, or builtin (with --olm: a File-Based Catalog URL, path or image)", src, o.Name)
	}
	verify, err := verifyPolicyFor(o)
	if err != nil {
		return nil, err
	}
	cat.Spec.Verify = verify
	return cat, nil
}

// AddCatalog creates the Catalog o describes; Annex syncs it at once.
func AddCatalog(ctx context.Context, c client.Client, o CatalogOptions) (*v1alpha1.Catalog, error) {
	cat, err := CatalogFor(o)
	if err != nil {
		return nil, err
	}
	if err := c.Create(ctx, cat); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("catalog %q exists already; remove it first (annexctl catalog remove %s) or choose another name", o.Name, o.Name)
		}
		return nil, fmt.Errorf("creating catalog %q: %w", o.Name, err)
	}
	return cat, nil
}

// RemoveCatalog deletes a Catalog. Annex then removes the Extensions it
// supplied; installations of them stay installed but cannot upgrade.
func RemoveCatalog(ctx context.Context, c client.Client, name string) error {
	cat := &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(ctx, cat); err != nil {
		return catalogError(name, err)
	}
	return nil
}

// SyncCatalog asks Annex to sync a Catalog now, by setting the
// annotation annex.dev/sync-requested-at to now (declarative: kubectl
// annotate does the same), and returns the value it set: WaitCatalog
// waits for the answer to it. The Catalog's Ready condition reports the
// result.
func SyncCatalog(ctx context.Context, c client.Client, name string, now time.Time) (string, error) {
	cat := &v1alpha1.Catalog{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, cat); err != nil {
		return "", catalogError(name, err)
	}
	patch := client.MergeFrom(cat.DeepCopy())
	if cat.Annotations == nil {
		cat.Annotations = map[string]string{}
	}
	request := now.UTC().Format(time.RFC3339Nano)
	cat.Annotations[v1alpha1.AnnotationSyncRequestedAt] = request
	if err := c.Patch(ctx, cat, patch); err != nil {
		return "", fmt.Errorf("requesting a sync of catalog %q: %w", name, err)
	}
	return request, nil
}

// catalogPoll is how often WaitCatalog reads the Catalog.
const catalogPoll = 250 * time.Millisecond

// WaitCatalog waits until the manager has synced Catalog name for its
// current generation and, when request is not "", answered the sync
// request SyncCatalog returned (status.lastHandledSyncRequest), then
// returns nil when it is Ready. Outcomes other than success are
// *ExitCodeError: ExitError with the Ready condition's message when the
// sync failed (the manager retries a source it cannot read, so a later
// sync may still succeed), ExitNotReady after timeout (0 means 2
// minutes), naming what was awaited.
func WaitCatalog(ctx context.Context, c client.Client, name, request string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	deadline := time.Now().Add(timeout)
	why := "not read yet"
	for {
		cat := &v1alpha1.Catalog{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, cat); err != nil {
			return catalogError(name, err)
		}
		ready := meta.FindStatusCondition(cat.Status.Conditions, v1alpha1.ConditionReady)
		switch {
		case ready == nil || ready.ObservedGeneration != cat.Generation:
			why = fmt.Sprintf("the manager has not synced generation %d yet", cat.Generation)
		case request != "" && cat.Status.LastHandledSyncRequest != request:
			why = fmt.Sprintf("the manager has not answered the sync requested at %s yet", request)
		case ready.Status == metav1.ConditionTrue:
			return nil
		default:
			return &ExitCodeError{Code: ExitError, Err: fmt.Errorf("catalog %q did not sync: %s: %s", name, ready.Reason, ready.Message)}
		}
		if time.Now().After(deadline) {
			return &ExitCodeError{Code: ExitNotReady, Err: fmt.Errorf("catalog %q: %s after %s; is the manager running? annexctl catalog list shows its state", name, why, timeout)}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(catalogPoll):
		}
	}
}

func catalogError(name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("no catalog %q; list them with annexctl catalog list", name)
	}
	return fmt.Errorf("catalog %q: %w", name, err)
}
