package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// discoveryTimeout bounds one discovery request of the mapper: a
// RESTMapper's methods take no context.
const discoveryTimeout = 30 * time.Second

// LazyMapper is a meta.RESTMapper that reads discovery one group version
// at a time, when a kind of it is first asked for, and keeps only the
// resources of the group versions asked for: their names, kinds and
// scope. A hub keeps one per managed cluster, so its memory follows the
// kinds the cluster's installations use (a few KiB), not everything the
// cluster serves (about 250 KiB for a plain kube-apiserver, kept by a
// mapper that reads all of discovery at once).
//
// A miss asks discovery again (the group's versions, then each version),
// so that the kinds of a CRD applied since become usable; what is known
// is never forgotten until it is asked for again and gone.
type LazyMapper struct {
	rest rest.Interface // sends discovery requests (JSON), as Applier.REST

	mu       sync.RWMutex
	groups   map[string][]string                          // group → served versions, preferred first
	versions map[schema.GroupVersion][]discoveredResource // nil slice: not served
}

// discoveredResource is one resource of a group version (no subresources).
type discoveredResource struct {
	kind, plural, singular string
	namespaced             bool
}

// NewLazyMapper returns a mapper asking discovery through c, a REST
// client without a group version that decodes JSON (Applier.REST).
func NewLazyMapper(c rest.Interface) *LazyMapper {
	return &LazyMapper{rest: c, groups: map[string][]string{}, versions: map[schema.GroupVersion][]discoveredResource{}}
}

// RESTMapping returns the mapping of gk in the first of versions that
// serves it; without versions, in the group's versions, preferred first.
func (m *LazyMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	mappings, err := m.find(gk, versions, true)
	if err != nil {
		return nil, err
	}
	return mappings[0], nil
}

// RESTMappings returns the mappings of gk in every one of versions that
// serves it; without versions, in each version of the group.
func (m *LazyMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return m.find(gk, versions, false)
}

// find looks gk up in the cache, and on a miss asks discovery again.
func (m *LazyMapper) find(gk schema.GroupKind, versions []string, first bool) ([]*meta.RESTMapping, error) {
	var searched []string
	for _, refresh := range []bool{false, true} {
		vs := versions
		if len(vs) == 0 {
			var err error
			if vs, err = m.groupVersions(gk.Group, refresh); err != nil {
				return nil, err
			}
		}
		var found []*meta.RESTMapping
		for _, v := range vs {
			gv := schema.GroupVersion{Group: gk.Group, Version: v}
			resources, err := m.resources(gv, refresh)
			if err != nil {
				return nil, err
			}
			for _, r := range resources {
				if r.kind == gk.Kind {
					found = append(found, r.mapping(gv))
					break
				}
			}
			if first && len(found) > 0 {
				return found, nil
			}
		}
		if len(found) > 0 {
			return found, nil
		}
		searched = vs
	}
	return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: searched}
}

func (r discoveredResource) mapping(gv schema.GroupVersion) *meta.RESTMapping {
	scope := meta.RESTScopeRoot
	if r.namespaced {
		scope = meta.RESTScopeNamespace
	}
	return &meta.RESTMapping{Resource: gv.WithResource(r.plural), GroupVersionKind: gv.WithKind(r.kind), Scope: scope}
}

// KindFor returns the kind of a resource named by its plural or singular
// name; without a version, in the group's versions, preferred first.
func (m *LazyMapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	kinds, err := m.KindsFor(resource)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return kinds[0], nil
}

// KindsFor returns the kinds of a resource in each version that serves it.
func (m *LazyMapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	var kinds []schema.GroupVersionKind
	err := m.eachResource(resource, func(gv schema.GroupVersion, r discoveredResource) {
		kinds = append(kinds, gv.WithKind(r.kind))
	})
	return kinds, err
}

// ResourceFor returns the fully qualified resource, preferred version
// first.
func (m *LazyMapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	resources, err := m.ResourcesFor(input)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return resources[0], nil
}

// ResourcesFor returns the fully qualified resource in each version that
// serves it.
func (m *LazyMapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	var out []schema.GroupVersionResource
	err := m.eachResource(input, func(gv schema.GroupVersion, r discoveredResource) {
		out = append(out, gv.WithResource(r.plural))
	})
	return out, err
}

// ResourceSingularizer returns the singular name of a plural resource
// name of the core group or of a group version already discovered.
func (m *LazyMapper) ResourceSingularizer(resource string) (string, error) {
	var singular string
	err := m.eachResource(schema.GroupVersionResource{Resource: resource}, func(_ schema.GroupVersion, r discoveredResource) {
		if singular == "" {
			singular = r.singular
		}
	})
	if singular == "" && err == nil {
		singular = resource
	}
	return singular, err
}

// eachResource calls f for each version of the group that serves the
// resource (by plural, singular or lower-case kind name), asking
// discovery again on a miss.
func (m *LazyMapper) eachResource(input schema.GroupVersionResource, f func(schema.GroupVersion, discoveredResource)) error {
	name := strings.ToLower(input.Resource)
	for _, refresh := range []bool{false, true} {
		vs := []string{input.Version}
		if input.Version == "" {
			var err error
			if vs, err = m.groupVersions(input.Group, refresh); err != nil {
				return err
			}
		}
		found := false
		for _, v := range vs {
			gv := schema.GroupVersion{Group: input.Group, Version: v}
			resources, err := m.resources(gv, refresh)
			if err != nil {
				return err
			}
			for _, r := range resources {
				if r.plural == name || r.singular == name || strings.ToLower(r.kind) == name {
					f(gv, r)
					found = true
					break
				}
			}
		}
		if found {
			return nil
		}
	}
	return &meta.NoResourceMatchError{PartialResource: input}
}

// groupVersions returns the versions group serves, preferred first (none
// when it is not served), from the cache unless refresh.
func (m *LazyMapper) groupVersions(group string, refresh bool) ([]string, error) {
	if group == "" {
		return []string{"v1"}, nil
	}
	m.mu.RLock()
	vs, ok := m.groups[group]
	m.mu.RUnlock()
	if ok && !refresh {
		return vs, nil
	}
	var g metav1.APIGroup
	served, err := m.get(&g, "/apis", group)
	if err != nil {
		return nil, err
	}
	vs = nil
	if served {
		if g.PreferredVersion.Version != "" {
			vs = append(vs, g.PreferredVersion.Version)
		}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				vs = append(vs, v.Version)
			}
		}
	}
	m.mu.Lock()
	m.groups[group] = vs
	m.mu.Unlock()
	return vs, nil
}

// resources returns the resources gv serves (none when it is not
// served), from the cache unless refresh.
func (m *LazyMapper) resources(gv schema.GroupVersion, refresh bool) ([]discoveredResource, error) {
	m.mu.RLock()
	rs, ok := m.versions[gv]
	m.mu.RUnlock()
	if ok && !refresh {
		return rs, nil
	}
	var list metav1.APIResourceList
	var served bool
	var err error
	if gv.Group == "" {
		served, err = m.get(&list, "/api", gv.Version)
	} else {
		served, err = m.get(&list, "/apis", gv.Group, gv.Version)
	}
	if err != nil {
		return nil, err
	}
	rs = nil
	if served {
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource is not a kind of its own
			}
			rs = append(rs, discoveredResource{kind: r.Kind, plural: r.Name, singular: r.SingularName, namespaced: r.Namespaced})
		}
	}
	m.mu.Lock()
	m.versions[gv] = rs
	m.mu.Unlock()
	return rs, nil
}

// get decodes the discovery document at path into into; false when the
// cluster does not serve it.
func (m *LazyMapper) get(into any, path ...string) (served bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), discoveryTimeout)
	defer cancel()
	data, err := m.rest.Get().AbsPath(path...).SetHeader("Accept", "application/json").Do(ctx).Raw()
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovery of %s: %w", strings.Join(path, "/"), err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		return false, fmt.Errorf("discovery of %s: %w", strings.Join(path, "/"), err)
	}
	return true, nil
}
