package exampleoperator

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of Banner.
	GroupVersion = schema.GroupVersion{Group: "example.annex.dev", Version: "v1alpha1"}

	schemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &Banner{}, &BannerList{})
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds Banner and BannerList to a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

// Banner asks the operator to publish a message: it writes the message
// into the ConfigMap <name>-banner next to the Banner and reports Ready
// once that ConfigMap holds it. The CRD (banners.example.annex.dev) ships
// in the operator's bundles.
type Banner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BannerSpec   `json:"spec"`
	Status BannerStatus `json:"status,omitempty"`
}

// BannerSpec is what the user asks for.
type BannerSpec struct {
	// Message is the text to publish.
	Message string `json:"message"`
}

// BannerStatus is what the operator observed.
type BannerStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions hold Ready: True once the ConfigMap holds the message.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ConfigMapName names the ConfigMap holding the message, once it
	// does. Operator versions from 0.2.0 set it.
	ConfigMapName string `json:"configMapName,omitempty"`
}

// BannerList is a list of Banners.
type BannerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Banner `json:"items"`
}

// DeepCopyInto copies b into out.
func (b *Banner) DeepCopyInto(out *Banner) {
	*out = *b
	out.TypeMeta = b.TypeMeta
	b.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = b.Spec
	out.Status = b.Status
	if b.Status.Conditions != nil {
		out.Status.Conditions = make([]metav1.Condition, len(b.Status.Conditions))
		for i := range b.Status.Conditions {
			b.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
		}
	}
}

// DeepCopy returns a deep copy of b.
func (b *Banner) DeepCopy() *Banner {
	if b == nil {
		return nil
	}
	out := new(Banner)
	b.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (b *Banner) DeepCopyObject() runtime.Object { return b.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *BannerList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &BannerList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Banner, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
