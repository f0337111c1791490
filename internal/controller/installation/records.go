package installation

import (
	"context"
	"fmt"
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
	Decode(data []byte) (Set, error)
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete

// recordName is the Secret holding revision n of an installation, after
// Helm's sh.helm.release.v1.<name>.v<n>.
func recordName(inst *v1alpha1.ExtensionInstallation, n int64) string {
	return fmt.Sprintf("annex.%s.v%d", inst.Name, n)
}

// saveRecord writes revision rev's record — the rendered set, hooks
// included, and its inventory — into a Secret owned by the installation,
// and deletes records older than the history keeps.
func (r *Reconciler) saveRecord(ctx context.Context, s *scope, rev v1alpha1.Revision, applied []v1alpha1.ObjectReference, set Set) error {
	if r.Records == nil {
		return nil
	}
	data, err := r.Records.Encode(rev, applied, set)
	if err != nil {
		return err
	}
	inst := s.inst
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
	if apierrors.IsAlreadyExists(err) { // a revision left pending by a crash, applied again
		existing := &corev1.Secret{}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(sec), existing); err != nil {
			return err
		}
		existing.Data, existing.Labels = sec.Data, sec.Labels
		err = r.Client.Update(ctx, existing)
	}
	if err != nil {
		return fmt.Errorf("writing the record of revision %d: %w", rev.Number, err)
	}
	if upTo := rev.Number - int64(r.historyLimit()); upTo > 0 {
		return r.deleteRecords(ctx, inst, upTo)
	}
	return nil
}

// latestRecord returns the rendered set of the installed revision, if its
// record exists.
func (r *Reconciler) latestRecord(ctx context.Context, inst *v1alpha1.ExtensionInstallation) (Set, bool, error) {
	if len(inst.Status.History) == 0 {
		return Set{}, false, nil
	}
	return r.recordOf(ctx, inst, inst.Status.History[0].Number)
}

// recordOf returns the rendered set of revision n, if its record exists.
func (r *Reconciler) recordOf(ctx context.Context, inst *v1alpha1.ExtensionInstallation, n int64) (Set, bool, error) {
	if r.Records == nil {
		return Set{}, false, nil
	}
	sec := &corev1.Secret{}
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: recordName(inst, n)}, sec)
	if apierrors.IsNotFound(err) {
		return Set{}, false, nil
	}
	if err != nil {
		return Set{}, false, err
	}
	set, err := r.Records.Decode(sec.Data["record"])
	return set, err == nil, err
}

// deleteRecordsOf deletes the records of the revisions the installation's
// status knows, pending included; a record it does not know (the status
// was lost) goes with the installation through its owner reference.
func (r *Reconciler) deleteRecordsOf(ctx context.Context, inst *v1alpha1.ExtensionInstallation) error {
	numbers := make([]int64, 0, len(inst.Status.History)+1)
	for _, rev := range inst.Status.History {
		numbers = append(numbers, rev.Number)
	}
	if inst.Status.Pending != nil {
		numbers = append(numbers, inst.Status.Pending.Number)
	}
	for _, n := range numbers {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: inst.Namespace, Name: recordName(inst, n)}}
		if err := r.Client.Delete(ctx, sec); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the record of revision %d: %w", n, err)
		}
	}
	return nil
}

// deleteRecords deletes the installation's records numbered upTo or lower.
func (r *Reconciler) deleteRecords(ctx context.Context, inst *v1alpha1.ExtensionInstallation, upTo int64) error {
	var list corev1.SecretList
	if err := r.Reader.List(ctx, &list, client.InNamespace(inst.Namespace),
		client.MatchingLabels{v1alpha1.LabelInstallationName: inst.Name}); err != nil {
		return err
	}
	for i := range list.Items {
		sec := &list.Items[i]
		if sec.Type != v1alpha1.RevisionSecretType {
			continue
		}
		n, err := strconv.ParseInt(sec.Labels[v1alpha1.LabelRevision], 10, 64)
		if err != nil || n > upTo {
			continue
		}
		if err := r.Client.Delete(ctx, sec); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
