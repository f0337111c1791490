package installation

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// RecordCodec turns a revision record into bytes and back; apply's
// EncodeRecord/DecodeRecord (gzip'd JSON) in production.
type RecordCodec interface {
	Encode(rev v1alpha1.Revision, inventory []v1alpha1.ObjectReference, set Set) ([]byte, error)
	// Decode returns the rendered set and the inventory of a record.
	Decode(data []byte) (Set, []v1alpha1.ObjectReference, error)
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete

// recordName is the Secret holding revision n of an installation, after
// Helm's sh.helm.release.v1.<name>.v<n>.
func recordName(inst *v1alpha1.ExtensionInstallation, n int64) string {
	return fmt.Sprintf("annex.%s.v%d", inst.Name, n)
}

// writeIntent records revision rev before any object of it is applied: a
// Secret owned by the installation gets the rendered set, hooks included,
// and the inventory about to be applied. A crash at any later
// instant leaves every object it applied listed there, where the next
// reconcile or the uninstall finds it; the status is written once, when
// the apply is done.
//
// A record of the same number is left by an attempt that crashed or failed
// before its revision was recorded in status. Its inventory joins the
// status inventory first, so that what that attempt applied stays owned
// (and is pruned if this attempt drops it); then the record is replaced.
// The status inventory grows by that inventory as well, so that a failing
// apply records everything it may have touched.
func (r *Reconciler) writeIntent(ctx context.Context, s *scope, rev v1alpha1.Revision, set Set) error {
	inst := s.inst
	planned := s.target.Applier().Refs(slices.Concat(set.CRDs, set.Objects), s.targetNamespace())
	data, err := r.Records.Encode(rev, planned, set)
	if err != nil {
		return err
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: inst.Namespace,
			Name:      recordName(inst, rev.Number),
			Labels: map[string]string{
				v1alpha1.LabelInstallationName: inst.Name,
				v1alpha1.LabelRevision:         strconv.FormatInt(rev.Number, 10),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation", Name: inst.Name, UID: inst.UID,
			}},
		},
		Type: v1alpha1.RevisionSecretType,
		Data: map[string][]byte{"record": data},
	}
	err = r.Client.Create(ctx, sec)
	if apierrors.IsAlreadyExists(err) {
		err = r.replaceLeftover(ctx, s, sec)
	}
	if err != nil {
		return fmt.Errorf("writing the record of revision %d: %w", rev.Number, err)
	}
	inst.Status.Inventory, _ = unionRefs(inst.Status.Inventory, planned)
	inst.Status.InventoryCount = int32(len(inst.Status.Inventory))
	return nil
}

// replaceLeftover takes the inventory of the record sec would replace into
// the status and overwrites the record with sec's content.
func (r *Reconciler) replaceLeftover(ctx context.Context, s *scope, sec *corev1.Secret) error {
	existing := &corev1.Secret{}
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(sec), existing); err != nil {
		return err
	}
	if existing.Type != v1alpha1.RevisionSecretType {
		return fmt.Errorf("Secret %s/%s exists and is not an Annex record (type %q); rename or delete it", sec.Namespace, sec.Name, existing.Type)
	}
	if _, leftover, err := r.Records.Decode(existing.Data["record"]); err == nil {
		s.inst.Status.Inventory, _ = unionRefs(s.inst.Status.Inventory, leftover)
	}
	// An undecodable record is overwritten: its objects still carry this
	// installation's labels, and the uninstall finds nothing better.
	existing.Data, existing.Labels, existing.OwnerReferences = sec.Data, sec.Labels, sec.OwnerReferences
	return r.Client.Update(ctx, existing)
}

// trimRecords deletes the records the history no longer keeps, once
// revision n is recorded.
func (r *Reconciler) trimRecords(ctx context.Context, inst *v1alpha1.ExtensionInstallation, n int64) error {
	upTo := n - int64(r.historyLimit())
	if upTo <= 0 {
		return nil
	}
	records, err := r.listRecords(ctx, inst)
	if err != nil {
		return err
	}
	for _, rec := range records {
		if rec.number <= upTo {
			if err := r.Client.Delete(ctx, rec.secret); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// recordOf returns the rendered set of revision n, if its record exists.
func (r *Reconciler) recordOf(ctx context.Context, inst *v1alpha1.ExtensionInstallation, n int64) (Set, bool, error) {
	sec := &corev1.Secret{}
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: recordName(inst, n)}, sec)
	if apierrors.IsNotFound(err) {
		return Set{}, false, nil
	}
	if err != nil {
		return Set{}, false, err
	}
	set, _, err := r.Records.Decode(sec.Data["record"])
	return set, err == nil, err
}

// storedRecord is one record Secret of an installation.
type storedRecord struct {
	number int64
	secret *corev1.Secret
}

// listRecords returns the installation's record Secrets, newest first.
func (r *Reconciler) listRecords(ctx context.Context, inst *v1alpha1.ExtensionInstallation) ([]storedRecord, error) {
	var list corev1.SecretList
	if err := r.Reader.List(ctx, &list, client.InNamespace(inst.Namespace),
		client.MatchingLabels{v1alpha1.LabelInstallationName: inst.Name}); err != nil {
		return nil, err
	}
	var out []storedRecord
	for i := range list.Items {
		sec := &list.Items[i]
		n, err := strconv.ParseInt(sec.Labels[v1alpha1.LabelRevision], 10, 64)
		if sec.Type != v1alpha1.RevisionSecretType || err != nil || sec.Name != recordName(inst, n) {
			continue
		}
		out = append(out, storedRecord{number: n, secret: sec})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].number > out[j].number })
	return out, nil
}
