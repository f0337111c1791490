{{/* hello.name is the name of every object of the release. */}}
{{- define "hello.name" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* hello.selectorLabels identify the greeter pods of the release. */}}
{{- define "hello.selectorLabels" -}}
app.kubernetes.io/name: hello
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* hello.labels go on every object of the release. */}}
{{- define "hello.labels" -}}
{{ include "hello.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: annex
{{- end -}}
