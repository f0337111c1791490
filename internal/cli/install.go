package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/strvals"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/resolve"
)

// InstallOptions describe an ExtensionInstallation to create.
type InstallOptions struct {
	// Extension to install.
	Extension string
	// Name and Namespace of the ExtensionInstallation; Name defaults to
	// the extension's name.
	Name, Namespace string
	// Version is a semver range; "" lets Annex choose the highest that
	// fits (spec.version defaults to "*").
	Version string
	// Cluster is the ManagedCluster to install into; "" is the hub.
	Cluster string
	// Channel is an operator's catalog channel (spec.channel); "" follows
	// the package's default channel.
	Channel string
	// TargetNamespace receives the extension's namespaced objects.
	TargetNamespace string
	// Values are YAML documents (the contents of --values files), merged
	// in order, each over the one before.
	Values [][]byte
	// Set are key=value pairs in Helm's --set syntax (a.b=c,d[0]=e),
	// applied over Values.
	Set []string
	// DryRun validates the installation with the API server (a
	// server-side dry run) and writes nothing.
	DryRun bool
}

// InstallationFor builds the ExtensionInstallation o describes, without
// reading or writing anything: what `install --dry-run -o yaml` prints
// and what kubectl apply accepts. Errors name the flag and its form.
func InstallationFor(o InstallOptions) (*v1alpha1.ExtensionInstallation, error) {
	if o.Extension == "" {
		return nil, Usagef("name the extension to install: annexctl install EXTENSION")
	}
	name := o.Name
	if name == "" {
		name = o.Extension
	}
	ns := o.Namespace
	if ns == "" {
		ns = "default"
	}
	values, err := MergeValues(nil, o.Values, o.Set)
	if err != nil {
		return nil, err
	}
	return &v1alpha1.ExtensionInstallation{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.ExtensionInstallationSpec{
			Extension: o.Extension, Version: o.Version, Cluster: o.Cluster, Channel: o.Channel,
			TargetNamespace: o.TargetNamespace, Values: values,
		},
	}, nil
}

// MergeValues merges YAML documents and then --set pairs over base (the
// values an installation has; nil for none), maps key by key, anything
// else replaced. It returns nil when the result is empty. Errors name
// the document or the pair that does not parse.
func MergeValues(base *apiextensionsv1.JSON, docs [][]byte, sets []string) (*apiextensionsv1.JSON, error) {
	merged := map[string]any{}
	if base != nil && len(base.Raw) > 0 {
		if err := json.Unmarshal(base.Raw, &merged); err != nil {
			return nil, fmt.Errorf("spec.values of the installation is not an object: %w", err)
		}
	}
	for i, doc := range docs {
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, Usagef("--values file %d: not a YAML map of values: %v", i+1, err)
		}
		merged = mergeMaps(merged, m)
	}
	for _, s := range sets {
		if !strings.Contains(s, "=") {
			return nil, Usagef("--set %q: use key=value, e.g. --set replicaCount=2 or --set image.tag=1.2.3", s)
		}
		if err := strvals.ParseInto(s, merged); err != nil {
			return nil, Usagef("--set %q: %v", s, err)
		}
	}
	if len(merged) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	return &apiextensionsv1.JSON{Raw: raw}, nil
}

func mergeMaps(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeMaps(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// Install creates the ExtensionInstallation o describes, after checking
// that the extension exists, that o.Version matches one of its versions
// and that the cluster exists; with o.DryRun the API server validates it
// and nothing is written. It returns the installation as built by
// InstallationFor. Errors name the object and the command that helps.
func Install(ctx context.Context, c client.Client, o InstallOptions) (*v1alpha1.ExtensionInstallation, error) {
	inst, err := InstallationFor(o)
	if err != nil {
		return nil, err
	}
	if err := checkTarget(ctx, c, inst.Spec.Extension, inst.Spec.Version, inst.Spec.Channel, inst.Spec.Cluster); err != nil {
		return nil, err
	}
	created := inst.DeepCopy()
	var opts []client.CreateOption
	if o.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := c.Create(ctx, created, opts...); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("ExtensionInstallation %s/%s exists already; change it with annexctl upgrade %s -n %s, or pass --name", inst.Namespace, inst.Name, inst.Name, inst.Namespace)
		}
		return nil, fmt.Errorf("creating ExtensionInstallation %s/%s: %w", inst.Namespace, inst.Name, err)
	}
	if !o.DryRun {
		inst.ObjectMeta = created.ObjectMeta
	}
	return inst, nil
}

// checkTarget refuses, before anything is written, an extension that no
// catalog supplies, a range none of its versions match, a channel none
// of its versions is in, and a cluster that is not registered.
func checkTarget(ctx context.Context, c client.Reader, extension, versionRange, channel, cluster string) error {
	ext := &v1alpha1.Extension{}
	if err := c.Get(ctx, client.ObjectKey{Name: extension}, ext); err != nil {
		return extensionError(extension, err)
	}
	if channel != "" {
		if err := checkChannel(ext, channel); err != nil {
			return err
		}
	}
	if versionRange != "" {
		rng, err := resolve.ParseRange(versionRange)
		if err != nil {
			return Usagef("--version %q is not a version range (e.g. 1.4.2, ^1.4, \">=1.2 <2\"): %v", versionRange, err)
		}
		var all []string
		match := false
		for _, v := range ext.Spec.Versions {
			all = append(all, v.Version)
			if sv, err := resolveVersion(v.Version); err == nil && rng.Check(sv) {
				match = true
			}
		}
		if !match {
			return fmt.Errorf("no version of extension %q matches --version %q; its versions: %s (see annexctl show %s)",
				extension, versionRange, strings.Join(all, ", "), extension)
		}
	}
	if cluster != "" {
		mc := &v1alpha1.ManagedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
			if apierrors.IsNotFound(err) {
				names, _ := ClusterNames(ctx, c)
				return fmt.Errorf("no ManagedCluster %q; registered clusters: %s (annexctl status lists them)", cluster, listOrNone(names))
			}
			return fmt.Errorf("reading ManagedCluster %q: %w", cluster, err)
		}
	}
	return nil
}

// checkChannel refuses a channel that none of ext's versions is in,
// naming the channels it has.
func checkChannel(ext *v1alpha1.Extension, channel string) error {
	var names []string
	for _, v := range ext.Spec.Versions {
		for _, ch := range v.Channels {
			if ch.Name == channel {
				return nil
			}
			if !slices.Contains(names, ch.Name) {
				names = append(names, ch.Name)
			}
		}
	}
	if len(names) == 0 {
		return Usagef("--channel %q: extension %q has no channels (only operator bundles do); leave --channel out", channel, ext.Name)
	}
	return Usagef("--channel %q: extension %q has no such channel; its channels: %s (see annexctl show %s)",
		channel, ext.Name, listOrNone(names), ext.Name)
}

// ExtensionChannels lists the channels of extension's versions, sorted;
// none for an extension that is not an operator.
func ExtensionChannels(ctx context.Context, c client.Reader, extension string) ([]string, error) {
	ext := &v1alpha1.Extension{}
	if err := c.Get(ctx, client.ObjectKey{Name: extension}, ext); err != nil {
		return nil, extensionError(extension, err)
	}
	var names []string
	for _, v := range ext.Spec.Versions {
		for _, ch := range v.Channels {
			names = append(names, ch.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// ExtensionOf is the extension the installation namespace/name installs.
func ExtensionOf(ctx context.Context, c client.Reader, namespace, name string) (string, error) {
	inst := &v1alpha1.ExtensionInstallation{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, inst); err != nil {
		return "", installationError(namespace, name, err)
	}
	return inst.Spec.Extension, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// UpgradeOptions describe a change to an ExtensionInstallation.
type UpgradeOptions struct {
	Name, Namespace string
	// Version, when set, replaces spec.version (a range).
	Version string
	// Channel, when set, replaces spec.channel (an operator's channel).
	Channel string
	// Values and Set are merged over the installation's values, as in
	// InstallOptions; with ResetValues they start from nothing instead.
	Values      [][]byte
	Set         []string
	ResetValues bool
	// DryRun validates the change with the API server and writes nothing.
	DryRun bool
}

// Upgrade changes an installation's version range and values (one GET,
// one PATCH) and returns it as changed; Annex then resolves, gates and
// applies the change. Nothing to change is an error saying what to pass.
func Upgrade(ctx context.Context, c client.Client, o UpgradeOptions) (*v1alpha1.ExtensionInstallation, error) {
	if o.Version == "" && o.Channel == "" && len(o.Values) == 0 && len(o.Set) == 0 && !o.ResetValues {
		return nil, Usagef("nothing to change on %s/%s: pass --version, --channel, --values, --set or --reset-values", o.Namespace, o.Name)
	}
	inst := &v1alpha1.ExtensionInstallation{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, inst); err != nil {
		return nil, installationError(o.Namespace, o.Name, err)
	}
	if o.Version != "" || o.Channel != "" {
		if err := checkTarget(ctx, c, inst.Spec.Extension, o.Version, o.Channel, ""); err != nil {
			return nil, err
		}
	}
	patch := client.MergeFrom(inst.DeepCopy())
	if o.Version != "" {
		inst.Spec.Version = o.Version
	}
	if o.Channel != "" {
		inst.Spec.Channel = o.Channel
	}
	if len(o.Values) > 0 || len(o.Set) > 0 || o.ResetValues {
		base := inst.Spec.Values
		if o.ResetValues {
			base = nil
		}
		values, err := MergeValues(base, o.Values, o.Set)
		if err != nil {
			return nil, err
		}
		inst.Spec.Values = values
	}
	var opts []client.PatchOption
	if o.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := c.Patch(ctx, inst, patch, opts...); err != nil {
		return nil, fmt.Errorf("changing ExtensionInstallation %s/%s: %w", o.Namespace, o.Name, err)
	}
	return inst, nil
}

// Uninstall deletes an installation; Annex removes what it installed
// and then the object. It returns the installations that depend on it
// (status.requiredBy): while there are any, Annex holds the deletion.
func Uninstall(ctx context.Context, c client.Client, namespace, name string) (requiredBy []string, err error) {
	inst := &v1alpha1.ExtensionInstallation{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, inst); err != nil {
		return nil, installationError(namespace, name, err)
	}
	if err := c.Delete(ctx, inst, client.Preconditions{UID: &inst.UID}); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("deleting ExtensionInstallation %s/%s: %w", namespace, name, err)
	}
	return inst.Status.RequiredBy, nil
}

// resolveVersion parses a catalog version as the resolver does.
func resolveVersion(v string) (*semver.Version, error) { return semver.NewVersion(v) }
