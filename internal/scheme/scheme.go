// Package scheme builds the runtime.Scheme every Annex client uses: the
// built-in kinds, CustomResourceDefinitions and the Annex API. It imports
// no controller, so the CLI and the tests can use it without linking the
// manager.
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// New returns a scheme with the built-in kinds, CRDs and the Annex API.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // the schemes are static; a failure is a programming error
		}
	}
	return s
}
