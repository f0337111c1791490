// Package kkp converts Kubermatic Kubernetes Platform (KKP) application
// manifests — ApplicationDefinitions and ApplicationInstallations of the
// API group apps.kubermatic.k8c.io/v1 — into Annex's Catalogs,
// ExtensionProfiles and ExtensionInstallations. It is pure: manifests in,
// objects and notes out. It reads only the fields it converts, into types
// of its own, so Annex does not depend on KKP's modules.
package kkp

import "encoding/json"

// Group is the API group of KKP's application objects.
const Group = "apps.kubermatic.k8c.io"

// objectMeta is the part of an object's metadata the conversion reads.
type objectMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// definition is a KKP ApplicationDefinition: an application and the
// versions KKP offers of it, each from a Helm repository or Git.
type definition struct {
	Metadata objectMeta     `json:"metadata"`
	Spec     definitionSpec `json:"spec"`
}

type definitionSpec struct {
	DisplayName          string           `json:"displayName,omitempty"`
	Description          string           `json:"description,omitempty"`
	Method               string           `json:"method,omitempty"`
	DefaultValues        json.RawMessage  `json:"defaultValues,omitempty"`
	DefaultValuesBlock   string           `json:"defaultValuesBlock,omitempty"`
	DefaultNamespace     *appNamespace    `json:"defaultNamespace,omitempty"`
	DefaultDeployOptions *deployOptions   `json:"defaultDeployOptions,omitempty"`
	DefaultVersion       string           `json:"defaultVersion,omitempty"`
	Enforced             bool             `json:"enforced,omitempty"`
	Default              bool             `json:"default,omitempty"`
	Selector             selector         `json:"selector,omitempty"`
	Versions             []appVersionSpec `json:"versions"`
}

type selector struct {
	Datacenters []string `json:"datacenters,omitempty"`
}

type appVersionSpec struct {
	Version  string `json:"version"`
	Template struct {
		Source struct {
			Helm *helmSource `json:"helm,omitempty"`
			Git  *struct {
				Remote string `json:"remote"`
			} `json:"git,omitempty"`
		} `json:"source"`
		TemplateCredentials json.RawMessage `json:"templateCredentials,omitempty"`
	} `json:"template"`
}

type helmSource struct {
	URL          string          `json:"url"`
	ChartName    string          `json:"chartName"`
	ChartVersion string          `json:"chartVersion"`
	Insecure     *bool           `json:"insecure,omitempty"`
	PlainHTTP    *bool           `json:"plainHTTP,omitempty"`
	Credentials  json.RawMessage `json:"credentials,omitempty"`
}

// installation is a KKP ApplicationInstallation: one application at one
// version in one user cluster, where it lives.
type installation struct {
	Metadata objectMeta       `json:"metadata"`
	Spec     installationSpec `json:"spec"`
}

type installationSpec struct {
	Namespace      *appNamespace `json:"namespace,omitempty"`
	ApplicationRef struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"applicationRef"`
	Values                 json.RawMessage `json:"values,omitempty"`
	ValuesBlock            string          `json:"valuesBlock,omitempty"`
	ReconciliationInterval string          `json:"reconciliationInterval,omitempty"`
	DeployOptions          *deployOptions  `json:"deployOptions,omitempty"`
}

type appNamespace struct {
	Name        string            `json:"name"`
	Create      *bool             `json:"create,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type deployOptions struct {
	Helm *struct {
		Wait      bool   `json:"wait,omitempty"`
		Timeout   string `json:"timeout,omitempty"`
		Atomic    bool   `json:"atomic,omitempty"`
		EnableDNS bool   `json:"enableDNS,omitempty"`
	} `json:"helm,omitempty"`
}
