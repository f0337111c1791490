package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cluster"
)

// AdoptHelmInPlace writes the ExtensionInstallation that adopts a Helm
// release in place (spec.adopt; the installation controller does the
// adopting). It reads and compares first, as AdoptHelmData does, so that
// it refuses before writing anything what the controller would refuse: a
// release that does not exist or is pending (with the fix), a chart in no
// catalog (naming the catalogs searched), a chart that does not render
// with the release's values. With the table output it prints the
// comparison and the installation it created; the caller then follows it
// (Wait) and prints the outcome (WriteAdopted).
func AdoptHelmInPlace(ctx context.Context, hub client.Client, clusters *cluster.Registry, fetch ArtifactFetcher, o AdoptOptions) (*v1alpha1.ExtensionInstallation, *AdoptView, error) {
	v, err := AdoptHelmData(ctx, hub, clusters, fetch, o)
	if err != nil {
		return nil, nil, err
	}
	inst, err := AdoptionFor(v, o)
	if err != nil {
		return nil, nil, err
	}
	if o.Output == OutputTable {
		if err := WriteAdopt(o.Out, v); err != nil {
			return nil, nil, err
		}
	}
	created := inst.DeepCopy()
	if err := hub.Create(ctx, created); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, nil, fmt.Errorf("ExtensionInstallation %s/%s exists already: an installation of that name adopts or installs it; delete it first, or look at it with annexctl status %s -n %s",
				inst.Namespace, inst.Name, inst.Name, inst.Namespace)
		}
		return nil, nil, fmt.Errorf("creating ExtensionInstallation %s/%s: %w", inst.Namespace, inst.Name, err)
	}
	if o.Output == OutputTable {
		if err := WriteObject(o.Out, o.Output, created, "created: it adopts the release"); err != nil {
			return nil, nil, err
		}
	}
	return created, v, nil
}

// AdoptionFor is the ExtensionInstallation that adopts the release v
// describes, without reading or writing anything: named after the
// release (the chart's release name), in o.InstallationNamespace (default:
// the release's namespace), for the Extension found, its version pinned
// to the release's chart version, its values the release's user-supplied
// values, on o.Cluster, rendering into the release's namespace, and
// spec.adopt naming the release (and its storage namespace when that is
// not the release's).
func AdoptionFor(v *AdoptView, o AdoptOptions) (*v1alpha1.ExtensionInstallation, error) {
	ns := cmp.Or(o.InstallationNamespace, v.Namespace)
	inst := &v1alpha1.ExtensionInstallation{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation"},
		ObjectMeta: metav1.ObjectMeta{Name: v.Release, Namespace: ns},
		Spec: v1alpha1.ExtensionInstallationSpec{
			Extension: v.Extension, Version: v.Version, Cluster: o.Cluster,
			Adopt: &v1alpha1.Adoption{Helm: &v1alpha1.HelmReleaseAdoption{Release: v.Release}},
		},
	}
	if v.Namespace != ns {
		inst.Spec.TargetNamespace = v.Namespace
	}
	if o.Namespace != "" && o.Namespace != v.Namespace {
		inst.Spec.Adopt.Helm.StorageNamespace = o.Namespace
	}
	if len(v.Values) > 0 {
		raw, err := json.Marshal(v.Values)
		if err != nil {
			return nil, fmt.Errorf("the values of Helm release %s/%s: %w", v.Namespace, v.Release, err)
		}
		inst.Spec.Values = &apiextensionsv1.JSON{Raw: raw}
	}
	return inst, nil
}

// KeptObjects reads again, after the adoption, each object of v that
// existed before it, and says whether it is the same object: "kept
// ConfigMap default/motd (uid …, unchanged)", or "REPLACED …" with both
// UIDs should it have been deleted and created again; then each Pod that
// was running: "kept Pod default/web-… of Deployment default/web (uid …,
// still running)", or GONE or CHANGED.
func KeptObjects(ctx context.Context, clusters *cluster.Registry, clusterName string, v *AdoptView) ([]string, error) {
	target, err := clusters.Target(ctx, clusterName)
	if err != nil {
		return nil, err
	}
	a := target.Applier()
	var out []string
	for _, o := range v.Objects {
		if o.UID == "" {
			continue
		}
		m, err := a.Mapper.RESTMapping(schema.GroupKind{Group: o.Object.Group, Kind: o.Object.Kind})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Object, err)
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(m.GroupVersionKind)
		switch err := a.Client.Get(ctx, client.ObjectKey{Namespace: o.Object.Namespace, Name: o.Object.Name}, live); {
		case apierrors.IsNotFound(err):
			out = append(out, fmt.Sprintf("GONE     %s (uid %s)", o.Object, o.UID))
		case err != nil:
			return nil, fmt.Errorf("%s: %w", o.Object, err)
		case live.GetUID() == o.UID:
			out = append(out, fmt.Sprintf("kept     %s (uid %s, unchanged)", o.Object, o.UID))
		default:
			out = append(out, fmt.Sprintf("REPLACED %s (uid %s, was %s)", o.Object, live.GetUID(), o.UID))
		}
	}
	for _, p := range v.Pods {
		pod := &corev1.Pod{}
		switch err := a.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, pod); {
		case apierrors.IsNotFound(err):
			out = append(out, fmt.Sprintf("GONE     Pod %s/%s of %s (uid %s): it was replaced", p.Namespace, p.Name, p.Of, p.UID))
		case err != nil:
			return nil, fmt.Errorf("Pod %s/%s: %w", p.Namespace, p.Name, err)
		case pod.UID == p.UID && pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil:
			out = append(out, fmt.Sprintf("kept     Pod %s/%s of %s (uid %s, still running)", p.Namespace, p.Name, p.Of, p.UID))
		default:
			out = append(out, fmt.Sprintf("CHANGED  Pod %s/%s of %s (uid %s, was %s; phase %s)", p.Namespace, p.Name, p.Of, pod.UID, p.UID, pod.Status.Phase))
		}
	}
	return out, nil
}

// WriteAdopted prints what an adoption did, from the installation's
// status once it is Ready, and kept (KeptObjects), one line each.
func WriteAdopted(w io.Writer, inst *v1alpha1.ExtensionInstallation, kept []string) error {
	for _, line := range kept {
		fmt.Fprintln(w, line)
	}
	from := inst.Status.AdoptedFrom
	if from == nil {
		_, err := fmt.Fprintf(w, "ExtensionInstallation %s/%s has not adopted anything yet; annexctl status %s -n %s follows it\n",
			inst.Namespace, inst.Name, inst.Name, inst.Namespace)
		return err
	}
	fmt.Fprintf(w, "Adopted Helm release %s/%s revision %d (%s %s) in place as ExtensionInstallation %s/%s, revision 1: %d objects, each kept with its UID.\n",
		from.Namespace, from.Name, from.Revision, from.Chart, from.Version, inst.Namespace, inst.Name, inst.Status.InventoryCount)
	storage := cmp.Or(from.StorageNamespace, from.Namespace)
	if from.StorageRemoved {
		_, err := fmt.Fprintf(w, "Helm's storage of the release (sh.helm.release.v1.%s.v* in %s) is deleted: helm list no longer shows it; upgrade it with annexctl upgrade %s -n %s.\n",
			from.Name, storage, inst.Name, inst.Namespace)
		return err
	}
	_, err := fmt.Fprintf(w, "Helm's storage of the release (sh.helm.release.v1.%s.v* in %s) is not deleted yet; annexctl status %s -n %s says why.\n",
		from.Name, storage, inst.Name, inst.Namespace)
	return err
}
