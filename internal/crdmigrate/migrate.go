// Package crdmigrate retires the old stored versions of a
// CustomResourceDefinition: it writes every object of the CRD back
// unchanged, which has the API server encode it at the current storage
// version, then trims status.storedVersions to that version. Afterwards
// an upgrade may drop the old versions from spec.versions (the API server
// refuses that while they are listed as stored, and crdcheck reports it
// as StoredVersionRemoved). This is the step kube-storage-version-migrator
// does in a cluster that runs it; Annex does it for the CRDs it installs.
//
// Migrate keeps no state of its own: the CRD's status.storedVersions is
// the record. A migration that stops half-way (a crash, an error, an
// expired list) is simply run again from the start: objects already at
// the storage version are written back unchanged, which the API server
// does not store again.
package crdmigrate

import (
	"context"
	"fmt"
	"slices"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/crdcheck"
)

// DefaultPageSize is how many objects one list request reads.
const DefaultPageSize = 500

// Result is what one Migrate did.
type Result struct {
	// StorageVersion is the CRD's storage version, the one the objects
	// were written at.
	StorageVersion string
	// Objects is how many objects were written back.
	Objects int
	// Trimmed are the versions removed from status.storedVersions; empty
	// when none was listed besides the storage version.
	Trimmed []string
}

var crdGVK = apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")

// Migrate retires the stale stored versions of the CRD name
// (crdcheck.StaleStoredVersions): it lists the CRD's objects at the
// storage version, pageSize at a time (DefaultPageSize when 0), writes
// each back as it read it (Workers at a time), then sets status.storedVersions to the
// storage version alone, through the CRD's status subresource. An object
// that changed or went since it was read is left alone: whoever changed
// it wrote it at the storage version. A CRD that does not exist, or
// lists no stale version, costs one read and returns a zero Result. The
// trim is written only when the storage version is still the one the
// objects were written at; otherwise nothing is trimmed and the next
// call migrates again. Errors are the API server's, wrapped with what
// was being done; c must read and write unstructured objects of any kind
// (a REST mapper that knows the CRD's kind).
func Migrate(ctx context.Context, c client.Client, name string, pageSize int64) (Result, error) {
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	crd, live, err := read(ctx, c, name)
	if err != nil || crd == nil {
		return Result{}, err
	}
	stale := crdcheck.StaleStoredVersions(crd)
	if len(stale) == 0 {
		return Result{}, nil
	}
	res := Result{StorageVersion: crdcheck.StorageVersion(crd)}
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: res.StorageVersion, Kind: crd.Spec.Names.Kind}
	if res.Objects, err = rewriteAll(ctx, c, gvk, pageSize); err != nil {
		return res, err
	}
	// Read again: the trim must name the storage version the objects
	// were just written at, and carry the CRD's newest resourceVersion.
	crd, live, err = read(ctx, c, name)
	if err != nil || crd == nil || crdcheck.StorageVersion(crd) != res.StorageVersion {
		return res, err
	}
	stale = crdcheck.StaleStoredVersions(crd)
	if len(stale) == 0 {
		return res, nil
	}
	if err := unstructured.SetNestedStringSlice(live.Object, []string{res.StorageVersion}, "status", "storedVersions"); err != nil {
		return res, err
	}
	if err := c.Status().Update(ctx, live); err != nil {
		return res, fmt.Errorf("trimming status.storedVersions of CustomResourceDefinition %s to %s: %w", name, res.StorageVersion, err)
	}
	res.Trimmed = slices.Clone(stale)
	return res, nil
}

// read gets the CRD name, typed and as it came; nil when it does not
// exist.
func read(ctx context.Context, c client.Client, name string) (*apiextensionsv1.CustomResourceDefinition, *unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(crdGVK)
	if err := c.Get(ctx, client.ObjectKey{Name: name}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("reading CustomResourceDefinition %s: %w", name, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, crd); err != nil {
		return nil, nil, fmt.Errorf("reading CustomResourceDefinition %s: %w", name, err)
	}
	return crd, live, nil
}

// rewriteAll writes every object of gvk back as it was read, page by
// page, and returns how many it wrote.
func rewriteAll(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, pageSize int64) (int, error) {
	written := 0
	next := ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := []client.ListOption{client.Limit(pageSize)}
		if next != "" {
			opts = append(opts, client.Continue(next))
		}
		if err := c.List(ctx, list, opts...); err != nil {
			return written, fmt.Errorf("listing the %s objects at %s: %w", gvk.Kind, gvk.GroupVersion(), err)
		}
		n, err := rewritePage(ctx, c, gvk, list.Items)
		written += n
		if err != nil {
			return written, err
		}
		if next = list.GetContinue(); next == "" {
			return written, nil
		}
	}
}

// Workers is how many objects of a page are written back at once: each
// write waits for the API server's storage, so a few at a time shorten a
// migration several times over without crowding the server.
const Workers = 4

// rewritePage writes items back, Workers at a time, and returns how many
// it wrote and the first error; an object changed or deleted since it
// was listed is skipped.
func rewritePage(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, items []unstructured.Unstructured) (int, error) {
	var (
		mu       sync.Mutex
		written  int
		firstErr error
		wg       sync.WaitGroup
	)
	next := make(chan *unstructured.Unstructured)
	for range min(Workers, len(items)) {
		wg.Go(func() {
			for obj := range next {
				err := c.Update(ctx, obj)
				mu.Lock()
				switch {
				case err == nil:
					written++
				case apierrors.IsConflict(err), apierrors.IsNotFound(err):
					// Changed or deleted since the list: written at the
					// storage version by whoever changed it, or gone.
				case firstErr == nil:
					firstErr = fmt.Errorf("writing %s %s back at %s: %w", gvk.Kind, objectName(obj), gvk.GroupVersion(), err)
				}
				mu.Unlock()
			}
		})
	}
	for i := range items {
		mu.Lock()
		stop := firstErr != nil
		mu.Unlock()
		if stop {
			break
		}
		next <- &items[i]
	}
	close(next)
	wg.Wait()
	return written, firstErr
}

func objectName(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
