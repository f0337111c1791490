package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// Storage without a kubelet or a CSI driver. kube-controller-manager's
// persistent-volume controller binds claims to volumes but has nothing to
// provision them with, so on its own a PersistentVolumeClaim stays Pending
// and a StatefulSet with volumeClaimTemplates never gets its pods
// scheduled. With Options.Workloads the cluster therefore has:
//
//   - the StorageClass "standard", the default class (claims that name no
//     class get it from the DefaultStorageClass admission plugin), with
//     provisioner annex.dev/local, Immediate binding and volume expansion;
//   - a volume binder in this process that plays that provisioner. For
//     every Pending claim of a class with provisioner annex.dev/local, or
//     of class "", it creates a PersistentVolume pvc-<claim uid> that fits
//     the claim (its request as capacity, its access modes, volume mode and
//     class) and names the claim in spec.claimRef; the controller-manager's
//     persistent-volume controller then binds the two (static binding of a
//     pre-bound volume). The volume is a hostPath under Dir/volumes/<claim
//     uid>: kwok's pods mount nothing, so the folder is never created, but
//     the path says where the data of a real node would be.
//
// Deleting: the volumes carry pv.kubernetes.io/provisioned-by:
// annex.dev/local, so when their claim is deleted the persistent-volume
// controller marks them Released and leaves the deletion to that
// (external) provisioner: the binder deletes them. Without the annotation
// the controller would use the in-tree hostPath deleter, which refuses any
// path that does not match "/tmp/.+" (it marks the volume Failed), and
// removes the folder from this machine when it does match.
//
// Expanding: kube-controller-manager's expand controller resizes only
// volumes of in-tree plugins that can expand (hostPath cannot) or of CSI
// drivers; for any other volume it records "waiting for an external
// controller to expand this PVC" and does nothing. So the binder is that
// external resizer too: when a bound claim of its volumes requests more
// than its status.capacity (the API server lets a request grow only when
// the claim's class has allowVolumeExpansion), it sets the volume's
// capacity to the request and then the claim's status.capacity and
// status.allocatedResources, as external-resizer does for a volume that
// needs no expansion on the node.
const (
	// StorageClassName is the local cluster's default StorageClass.
	StorageClassName = "standard"
	// StorageProvisioner is the provisioner name of that class and the
	// binder's volumes.
	StorageProvisioner = "annex.dev/local"
	// VolumeLabel marks the PersistentVolumes the binder creates (value
	// "true"); it deletes only those.
	VolumeLabel = "annex.dev/local-volume"

	volumesDir          = "volumes"
	annDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	annBetaDefaultClass = "storageclass.beta.kubernetes.io/is-default-class"
	annBetaClass        = "volume.beta.kubernetes.io/storage-class"
	annProvisionedBy    = "pv.kubernetes.io/provisioned-by"
	storageResyncPeriod = 5 * time.Minute
	storageRetryBase    = 200 * time.Millisecond
	storageRetryMax     = 30 * time.Second
	storageSyncTimeout  = 30 * time.Second
	claimKeyPrefix      = "claim/"
	volumeKeyPrefix     = "volume/"
	volumeNamePrefix    = "pvc-"
)

// volumeBinder provisions, resizes and deletes the local cluster's
// volumes; see above.
type volumeBinder struct {
	cs      kubernetes.Interface
	dir     string // Dir/volumes
	logf    func(format string, args ...any)
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	queue   workqueue.TypedRateLimitingInterface[string]

	cancel context.CancelFunc
	done   chan struct{}
}

// startStorage creates the StorageClass "standard" unless it exists (a
// user's changes to it are kept) and starts the volume binder, which runs
// until stopStorageLocked.
func (c *Cluster) startStorage(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	if err := ensureStorageClass(ctx, cs); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(cs, storageResyncPeriod)
	b := &volumeBinder{
		cs:   cs,
		dir:  filepath.Join(c.opts.Dir, volumesDir),
		logf: func(format string, args ...any) { fmt.Fprintf(c.opts.Log, "storage: "+format+"\n", args...) },
		queue: workqueue.NewTypedRateLimitingQueue(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](storageRetryBase, storageRetryMax)),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	claimInformer := factory.Core().V1().PersistentVolumeClaims()
	volumeInformer := factory.Core().V1().PersistentVolumes()
	classInformer := factory.Storage().V1().StorageClasses()
	b.claims, b.volumes, b.classes = claimInformer.Lister(), volumeInformer.Lister(), classInformer.Lister()
	if _, err := claimInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { b.enqueueClaim(obj) },
		UpdateFunc: func(_, obj any) { b.enqueueClaim(obj) },
	}); err != nil {
		cancel()
		return err
	}
	if _, err := volumeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { b.enqueueVolume(obj, false) },
		UpdateFunc: func(_, obj any) { b.enqueueVolume(obj, false) },
		DeleteFunc: func(obj any) { b.enqueueVolume(obj, true) },
	}); err != nil {
		cancel()
		return err
	}
	c.storage = b
	factory.Start(runCtx.Done())
	go func() {
		defer close(b.done)
		defer factory.Shutdown()
		b.run(runCtx, factory)
	}()
	fmt.Fprintf(c.opts.Log, "storage: default StorageClass %q; claims get volumes in %s\n", StorageClassName, b.dir)
	return nil
}

// stopStorageLocked stops the volume binder and waits for it.
func (c *Cluster) stopStorageLocked() {
	if c.storage == nil {
		return
	}
	c.storage.cancel()
	c.storage.queue.ShutDown()
	<-c.storage.done
	c.storage = nil
}

func ensureStorageClass(ctx context.Context, cs kubernetes.Interface) error {
	class := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClassName,
			Annotations: map[string]string{annDefaultClass: "true"},
			Labels:      map[string]string{VolumeLabel: "true"},
		},
		Provisioner:          StorageProvisioner,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
		AllowVolumeExpansion: ptr.To(true),
	}
	_, err := cs.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass %s: %w", StorageClassName, err)
	}
	return nil
}

func (b *volumeBinder) run(ctx context.Context, factory informers.SharedInformerFactory) {
	syncCtx, cancel := context.WithTimeout(ctx, storageSyncTimeout)
	synced := factory.WaitForCacheSync(syncCtx.Done())
	cancel()
	for typ, ok := range synced {
		if !ok && ctx.Err() == nil {
			// The informers keep trying; the queue fills once they list.
			b.logf("the %v cache has not synced after %s; still trying", typ, storageSyncTimeout)
		}
	}
	for processNext(ctx, b.queue, b.sync, b.logf) {
	}
}

func (b *volumeBinder) enqueueClaim(obj any) {
	if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		b.queue.Add(claimKeyPrefix + pvc.Namespace + "/" + pvc.Name)
	}
}

func (b *volumeBinder) enqueueVolume(obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return
	}
	if !deleted {
		b.queue.Add(volumeKeyPrefix + pv.Name)
	}
	// A claim whose volume went away may need a new one.
	if ref := pv.Spec.ClaimRef; deleted && ref != nil {
		b.queue.Add(claimKeyPrefix + ref.Namespace + "/" + ref.Name)
	}
}

// processNext takes one key from queue and syncs it; a failed sync is
// retried with the queue's backoff and logged the first time and then
// every tenth retry. It returns false once the queue shuts down.
func processNext(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error, logf func(string, ...any)) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	switch err := sync(ctx, key); {
	case err == nil:
		queue.Forget(key)
	case ctx.Err() != nil:
	default:
		if n := queue.NumRequeues(key); n%10 == 0 {
			logf("%s: %v (retrying)", key, err)
		}
		queue.AddRateLimited(key)
	}
	return true
}

// sync syncs the claim or volume a queue key names.
func (b *volumeBinder) sync(ctx context.Context, key string) error {
	if name, ok := strings.CutPrefix(key, volumeKeyPrefix); ok {
		return b.syncVolume(ctx, name)
	}
	return b.syncClaim(ctx, strings.TrimPrefix(key, claimKeyPrefix))
}

// syncClaim provisions a volume for a Pending claim the binder serves, or
// resizes the volume of a bound claim whose request grew.
func (b *volumeBinder) syncClaim(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pvc, err := b.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pvc.DeletionTimestamp != nil {
		return nil
	}
	if pvc.Spec.VolumeName != "" {
		return b.expand(ctx, pvc)
	}
	class, serve, err := b.classOf(pvc)
	if err != nil || !serve {
		return err
	}
	pvName := volumeNamePrefix + string(pvc.UID)
	if _, err := b.volumes.Get(pvName); err == nil {
		return nil // made already; the persistent-volume controller binds it
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	size, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil // the API server requires a request; nothing to fit
	}
	pv := b.volumeFor(pvc, pvName, class, size)
	if _, err := b.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("creating volume %s: %w", pvName, err)
	}
	b.logf("claim %s/%s bound to new volume %s (%s, class %q)", pvc.Namespace, pvc.Name, pvName, size.String(), class)
	return nil
}

// classOf returns the class a volume for pvc must have and whether the
// binder serves pvc: claims of a class whose provisioner is
// annex.dev/local, claims of class "", and claims that name no class while
// the cluster has no default class (the persistent-volume controller gives
// them the default class when there is one, and the binder waits for
// that).
func (b *volumeBinder) classOf(pvc *corev1.PersistentVolumeClaim) (string, bool, error) {
	var class string
	switch {
	case pvc.Annotations[annBetaClass] != "":
		class = pvc.Annotations[annBetaClass]
	case pvc.Spec.StorageClassName != nil:
		class = *pvc.Spec.StorageClassName
	default:
		classes, err := b.classes.List(labels.Everything())
		if err != nil {
			return "", false, err
		}
		for _, sc := range classes {
			if sc.Annotations[annDefaultClass] == "true" || sc.Annotations[annBetaDefaultClass] == "true" {
				return "", false, nil
			}
		}
		return "", true, nil
	}
	if class == "" {
		return "", true, nil
	}
	sc, err := b.classes.Get(class)
	if apierrors.IsNotFound(err) {
		return class, false, nil
	}
	if err != nil {
		return "", false, err
	}
	return class, sc.Provisioner == StorageProvisioner, nil
}

// volumeFor is a volume that satisfies pvc and only pvc.
func (b *volumeBinder) volumeFor(pvc *corev1.PersistentVolumeClaim, name, class string, size resource.Quantity) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{VolumeLabel: "true"},
			Annotations: map[string]string{annProvisionedBy: StorageProvisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   append([]corev1.PersistentVolumeAccessMode(nil), pvc.Spec.AccessModes...),
			VolumeMode:                    pvc.Spec.VolumeMode,
			StorageClassName:              class,
			VolumeAttributesClassName:     pvc.Spec.VolumeAttributesClassName,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef: &corev1.ObjectReference{
				APIVersion: "v1",
				Kind:       "PersistentVolumeClaim",
				Namespace:  pvc.Namespace,
				Name:       pvc.Name,
				UID:        pvc.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{
					Path: filepath.Join(b.dir, string(pvc.UID)),
					Type: ptr.To(corev1.HostPathDirectoryOrCreate),
				},
			},
		},
	}
}

// expand resizes the binder's volume of a bound claim to the claim's
// request, when that is more than the claim's status.capacity, and then
// reports the new size in the claim's status.
func (b *volumeBinder) expand(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.Status.Phase != corev1.ClaimBound {
		return nil
	}
	want, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil
	}
	have := pvc.Status.Capacity[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 {
		return nil
	}
	pv, err := b.volumes.Get(pvc.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.Labels[VolumeLabel] != "true" || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return nil
	}
	if size := pv.Spec.Capacity[corev1.ResourceStorage]; size.Cmp(want) < 0 {
		patch := fmt.Appendf(nil, `{"spec":{"capacity":{"storage":%q}}}`, want.String())
		if _, err := b.cs.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("resizing volume %s: %w", pv.Name, err)
		}
	}
	// What external-resizer writes once a volume that needs no expansion
	// on the node has grown: the new capacity, the allocated size, no
	// resize in progress.
	status := map[string]any{
		"capacity":           map[string]string{"storage": want.String()},
		"allocatedResources": map[string]string{"storage": want.String()},
	}
	if _, ok := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; ok {
		status["allocatedResourceStatuses"] = map[string]any{"storage": nil}
	}
	var conditions []corev1.PersistentVolumeClaimCondition
	for _, cond := range pvc.Status.Conditions {
		if cond.Type != corev1.PersistentVolumeClaimResizing && cond.Type != corev1.PersistentVolumeClaimFileSystemResizePending {
			conditions = append(conditions, cond)
		}
	}
	if len(conditions) != len(pvc.Status.Conditions) {
		status["conditions"] = conditions
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	if _, err := b.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("reporting the new size of claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	b.logf("claim %s/%s expanded from %s to %s (volume %s)", pvc.Namespace, pvc.Name, have.String(), want.String(), pv.Name)
	return nil
}

// syncVolume deletes a volume of the binder's once its claim is gone: the
// persistent-volume controller marks it Released and leaves the deletion
// to the provisioner. Failed volumes (which the controller marks when it
// cannot reclaim them) go too.
func (b *volumeBinder) syncVolume(ctx context.Context, name string) error {
	pv, err := b.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.Labels[VolumeLabel] != "true" || pv.DeletionTimestamp != nil ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return nil
	}
	if phase := pv.Status.Phase; phase != corev1.VolumeReleased && phase != corev1.VolumeFailed {
		return nil
	}
	err = b.cs.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pv.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting volume %s: %w", name, err)
	}
	// Only the binder's own folders: a volume's path is Dir/volumes/<uid>.
	if src := pv.Spec.HostPath; src != nil {
		if path := filepath.Clean(src.Path); filepath.Dir(path) == b.dir {
			if err := os.RemoveAll(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				b.logf("removing %s: %v", path, err)
			}
		}
	}
	claim := "?"
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = ref.Namespace + "/" + ref.Name
	}
	b.logf("volume %s deleted (%s; its claim %s is gone)", name, pv.Status.Phase, claim)
	return nil
}
