package bench

import "github.com/annex-platform/annex/internal/testenv/helmrepo"

// chartName is the extension every installation of the system benchmark
// installs, as Flux's benchmark app does.
const chartName = "flux-benchmark"

// benchChart renders, for release R, exactly appObjects(ns, i) with R =
// app-<i>: a ServiceAccount, a Service, a Deployment scaled to zero and an
// Ingress, so that the plain client, Annex and the Helm CLI create the
// same objects.
func benchChart() helmrepo.Chart {
	return helmrepo.Chart{
		Name:    chartName,
		Version: "1.0.0",
		Files: map[string]string{
			"templates/serviceaccount.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}
  labels: {app: {{ .Release.Name }}}
`,
			"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
  labels: {app: {{ .Release.Name }}}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{name: http, port: 80, targetPort: 8080}]
`,
			"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {app: {{ .Release.Name }}}
spec:
  replicas: 0
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      serviceAccountName: {{ .Release.Name }}
      containers:
      - name: web
        image: registry.example/web:1.0
        ports: [{name: http, containerPort: 8080}]
`,
			"templates/ingress.yaml": `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {{ .Release.Name }}
  labels: {app: {{ .Release.Name }}}
spec:
  rules:
  - host: {{ .Release.Name }}.example
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {service: {name: {{ .Release.Name }}, port: {number: 80}}}
`,
		},
	}
}
