package profile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/Masterminds/semver/v3"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/resolve"
)

// revision is one stored revision of a profile.
type revision struct {
	number int64
	name   string
	data   *v1alpha1.ProfileRevisionData
	// requester is who last changed the profile's spec when the revision
	// was made (annex.dev/requested-by, copied onto the revision).
	requester string
}

// wantedRevision is what the profile says now, each range resolved to the
// highest catalog version within it (pure).
func wantedRevision(p *v1alpha1.ExtensionProfile, catalog map[string]*v1alpha1.Extension) *v1alpha1.ProfileRevisionData {
	out := &v1alpha1.ProfileRevisionData{}
	if p.Spec.Rollout != nil {
		out.IgnoreMaintenanceWindows = p.Spec.Rollout.IgnoreMaintenanceWindows
	}
	for _, ext := range p.Spec.Extensions {
		e := v1alpha1.ProfileRevisionExtension{ProfileExtension: *ext.DeepCopy()}
		if e.Version == "" {
			e.Version = "*"
		}
		if e.Mode == "" {
			e.Mode = v1alpha1.ProfileModeDefault
		}
		e.Target = highestIn(e.Version, catalog[ext.Name], nil)
		out.Extensions = append(out.Extensions, e)
	}
	return out
}

// highestIn is the highest version of ext within rangeText, no higher
// than ceiling when set, whose kubeVersion admits kube when set;
// deprecated versions only when nothing else fits. "" when none does.
func highestIn(rangeText string, ext *v1alpha1.Extension, fits func(v v1alpha1.ExtensionVersion) bool) string {
	if ext == nil {
		return ""
	}
	c, err := semver.NewConstraint(rangeText)
	if err != nil {
		return ""
	}
	var best, bestDeprecated *semver.Version
	var bestText, bestDeprecatedText string
	for _, v := range ext.Spec.Versions {
		sv, err := semver.NewVersion(v.Version)
		if err != nil || !c.Check(sv) || (fits != nil && !fits(v)) {
			continue
		}
		if v.Deprecated {
			if bestDeprecated == nil || sv.GreaterThan(bestDeprecated) {
				bestDeprecated, bestDeprecatedText = sv, v.Version
			}
			continue
		}
		if best == nil || sv.GreaterThan(best) {
			best, bestText = sv, v.Version
		}
	}
	if best != nil {
		return bestText
	}
	return bestDeprecatedText
}

// versionFor is the version range an installation of ext gets on a
// cluster running kube: the revision's target when the cluster can run
// it; else the highest version within the range, below the target, that
// fits the cluster, and held says why the cluster is held below the
// target; the range itself when the catalog has no version for it (the
// installation then says why).
func versionFor(ext v1alpha1.ProfileRevisionExtension, catalog map[string]*v1alpha1.Extension, kube string) (version, held string) {
	if ext.Target == "" {
		return ext.Version, ""
	}
	if ext.Mode != v1alpha1.ProfileModeEnforced {
		// A Default installation is its cluster owners' once created: it
		// gets the range, and the rollout stages its creation only.
		return ext.Version, ""
	}
	kv, err := semver.NewVersion(kube)
	if err != nil {
		return ext.Target, "" // not observed yet: the installation checks it
	}
	target, _ := semver.NewVersion(ext.Target)
	fit := highestIn(ext.Version, catalog[ext.Name], func(v v1alpha1.ExtensionVersion) bool {
		sv, err := semver.NewVersion(v.Version)
		return err == nil && target != nil && !sv.GreaterThan(target) && resolve.KubeVersionAllows(v.KubeVersion, kv)
	})
	if fit == "" {
		return ext.Target, "" // nothing fits: the installation explains why
	}
	if fit != ext.Target {
		held = fmt.Sprintf("%s %s needs Kubernetes %s and the cluster runs %s: it gets %s, the highest version within %q that fits",
			ext.Name, ext.Target, targetKube(catalog[ext.Name], ext.Target), kube, fit, ext.Version)
	}
	return fit, held
}

// targetKube is the kubeVersion range the catalog gives version of ext.
func targetKube(ext *v1alpha1.Extension, version string) string {
	if ext != nil {
		for _, v := range ext.Spec.Versions {
			if v.Version == version {
				return v.KubeVersion
			}
		}
	}
	return "(unknown)"
}

// versionMemo remembers versionFor's answers within one reconcile: a
// thousand clusters run a handful of Kubernetes versions.
type versionMemo map[versionKey][2]string

type versionKey struct {
	ext                     string
	mode                    v1alpha1.ProfileMode
	rangeText, target, kube string
}

func (m versionMemo) versionFor(ext v1alpha1.ProfileRevisionExtension, catalog map[string]*v1alpha1.Extension, kube string) (string, string) {
	if m == nil {
		return versionFor(ext, catalog, kube)
	}
	k := versionKey{ext.Name, ext.Mode, ext.Version, ext.Target, kube}
	if got, ok := m[k]; ok {
		return got[0], got[1]
	}
	v, held := versionFor(ext, catalog, kube)
	m[k] = [2]string{v, held}
	return v, held
}

// revisions reads p's revisions, oldest first.
func (r *Reconciler) revisions(ctx context.Context, p *v1alpha1.ExtensionProfile) ([]revision, error) {
	var list appsv1.ControllerRevisionList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespaceOf(p)), client.MatchingLabels{v1alpha1.LabelProfile: p.Name}); err != nil {
		return nil, err
	}
	out := make([]revision, 0, len(list.Items))
	for _, cr := range list.Items {
		if !cr.DeletionTimestamp.IsZero() || !ownedBy(&cr, p) {
			continue
		}
		data := &v1alpha1.ProfileRevisionData{}
		if err := json.Unmarshal(cr.Data.Raw, data); err != nil {
			return nil, fmt.Errorf("ControllerRevision %s/%s: data: %w; delete it and Annex writes the profile's revision anew", cr.Namespace, cr.Name, err)
		}
		out = append(out, revision{number: cr.Revision, name: cr.Name, data: data, requester: cr.Annotations[v1alpha1.AnnotationRequestedBy]})
	}
	slices.SortFunc(out, func(a, b revision) int { return int(a.number - b.number) })
	return out, nil
}

func ownedBy(o metav1.Object, p *v1alpha1.ExtensionProfile) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == p.UID {
			return true
		}
	}
	return false
}

// ensureRevision returns the revision that holds want: the newest when it
// already does, else a new one numbered after it.
func (r *Reconciler) ensureRevision(ctx context.Context, p *v1alpha1.ExtensionProfile, have []revision,
	want *v1alpha1.ProfileRevisionData) ([]revision, int64, bool, error) {
	if n := len(have); n > 0 && equality.Semantic.DeepEqual(have[n-1].data, want) {
		return have, have[n-1].number, false, nil
	}
	number := int64(1)
	if n := len(have); n > 0 {
		number = have[n-1].number + 1
	}
	raw, err := json.Marshal(want)
	if err != nil {
		return nil, 0, false, err
	}
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespaceOf(p),
			Name:      p.Name + "-" + strconv.FormatInt(number, 10),
			Labels:    map[string]string{v1alpha1.LabelProfile: p.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionProfile",
				Name: p.Name, UID: p.UID}},
		},
		Data:     runtime.RawExtension{Raw: raw},
		Revision: number,
	}
	cr.Annotations = map[string]string{}
	for _, key := range []string{v1alpha1.AnnotationChangeCause, v1alpha1.AnnotationRequestedBy} {
		if v := p.Annotations[key]; v != "" {
			cr.Annotations[key] = v
		}
	}
	if err := r.Client.Create(ctx, cr); err != nil {
		return nil, 0, false, fmt.Errorf("ControllerRevision %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return append(have, revision{number: number, name: cr.Name, data: want, requester: p.Annotations[v1alpha1.AnnotationRequestedBy]}), number, true, nil
}

// prune deletes the oldest revisions past spec.revisionHistoryLimit that
// no cluster runs and the rollout does not need.
func (r *Reconciler) prune(ctx context.Context, p *v1alpha1.ExtensionProfile, have []revision, inUse map[int64]bool) error {
	limit := 10
	if p.Spec.RevisionHistoryLimit != nil {
		limit = int(*p.Spec.RevisionHistoryLimit)
	}
	extra := len(have) - limit
	for _, rev := range have {
		if extra <= 0 {
			break
		}
		if inUse[rev.number] {
			continue
		}
		cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: namespaceOf(p), Name: rev.name}}
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, cr)); err != nil {
			return err
		}
		extra--
	}
	return nil
}
