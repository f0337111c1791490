package console

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// watched are the kinds the console keeps in informers (one LIST and one
// WATCH each, as the user): the list pages read them whole, and a change
// to any of them refreshes open pages.
var watched = []struct {
	obj      client.Object
	resource string
}{
	{&v1alpha1.ExtensionInstallation{}, "extensioninstallations"},
	{&v1alpha1.Extension{}, "extensions"},
	{&v1alpha1.ManagedCluster{}, "managedclusters"},
	{&v1alpha1.Catalog{}, "catalogs"},
	{&v1alpha1.ExtensionProfile{}, "extensionprofiles"},
}

// reader reads the watched kinds from the informers and everything else
// from the API server; both as the user. A watched kind the user may not
// list and watch cluster-wide is not cached: reading it returns an error
// that says so, instead of waiting forever for an informer RBAC starves.
type reader struct {
	cache  cache.Cache
	direct client.Reader
	scheme *runtime.Scheme
	// denied maps a watched kind to why it is not cached.
	denied map[schema.GroupVersionKind]error
	cached map[schema.GroupVersionKind]bool
}

func (r *reader) route(obj runtime.Object) (client.Reader, error) {
	gvk, err := apiutil.GVKForObject(obj, r.scheme)
	if err != nil {
		return nil, err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	if err := r.denied[gvk]; err != nil {
		return nil, err
	}
	if r.cached[gvk] {
		return r.cache, nil
	}
	return r.direct, nil
}

// Get implements client.Reader.
func (r *reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	rd, err := r.route(obj)
	if err != nil {
		return err
	}
	return rd.Get(ctx, key, obj, opts...)
}

// List implements client.Reader.
func (r *reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	rd, err := r.route(list)
	if err != nil {
		return err
	}
	return rd.List(ctx, list, opts...)
}

// startCache starts informers for the watched kinds the user may list and
// watch cluster-wide, calls changed on every add, update and delete of
// them (with the installation's key for an installation, else ""), and
// waits until they have synced (bounded by syncTimeout).
func startCache(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, direct client.Client, user string, changed func(key string), syncTimeout time.Duration) (*reader, error) {
	c, err := cache.New(cfg, cache.Options{
		Scheme:                      scheme,
		DefaultTransform:            cache.TransformStripManagedFields(),
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, err
	}
	r := &reader{cache: c, direct: direct, scheme: scheme,
		denied: map[schema.GroupVersionKind]error{}, cached: map[schema.GroupVersionKind]bool{}}
	notify := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		key := ""
		switch o := obj.(type) {
		case *v1alpha1.ExtensionInstallation:
			key = objectKey(o.Namespace, o.Name)
		case *v1alpha1.ExtensionProfile:
			key = profileKey(o.Name)
		}
		changed(key)
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj any) { notify(obj) },
		DeleteFunc: notify,
	}
	for _, w := range watched {
		gvk, err := apiutil.GVKForObject(w.obj, scheme)
		if err != nil {
			return nil, err
		}
		if err := mayListAndWatch(ctx, direct, w.resource); err != nil {
			r.denied[gvk] = deniedError(fmt.Sprintf("you (%s) may not list and watch %s.%s in every namespace (%v): ask for a ClusterRole that grants get, list and watch on it", user, w.resource, v1alpha1.GroupVersion.Group, err))
			continue
		}
		inf, err := c.GetInformer(ctx, w.obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
		r.cached[gvk] = true
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		return nil, fmt.Errorf("the console's informers did not sync within %s: is the API server reachable, and are the Annex CRDs installed?", syncTimeout)
	}
	return r, nil
}

// mayListAndWatch asks the API server whether the user may list and
// watch resource (of annex.dev) in every namespace.
func mayListAndWatch(ctx context.Context, c client.Client, resource string) error {
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: v1alpha1.GroupVersion.Group, Resource: resource},
		}}
		if err := c.Create(ctx, review); err != nil {
			return fmt.Errorf("asking the API server whether you may %s %s: %w", verb, resource, err)
		}
		if !review.Status.Allowed {
			return fmt.Errorf("%s is not allowed", verb)
		}
	}
	return nil
}

// deniedError says the user may not read a watched kind.
type deniedError string

func (e deniedError) Error() string { return string(e) }
