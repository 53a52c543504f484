{{/* Chart name. */}}
{{- define "redis-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Prefix of every object's name, cluster-scoped ones included, so two releases never collide.
Cut at 45 characters so "<fullname>-leader-election" still fits 63.
*/}}
{{- define "redis-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 45 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 45 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 45 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "redis-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "redis-operator.labels" -}}
helm.sh/chart: {{ include "redis-operator.chart" . }}
app.kubernetes.io/name: {{ include "redis-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: redis-operator
{{- end }}

{{/* Selector labels of one component: include with (dict "root" $ "component" "webhook"). */}}
{{- define "redis-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "redis-operator.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "redis-operator.controller.name" -}}
{{ include "redis-operator.fullname" . }}-controller
{{- end }}

{{- define "redis-operator.webhook.name" -}}
{{ include "redis-operator.fullname" . }}-webhook
{{- end }}

{{/* The Secret the webhook serves from. */}}
{{- define "redis-operator.webhook.secretName" -}}
{{- if eq .Values.certs.mode "secret" }}
{{- required "certs.secret.name is required when certs.mode is secret" .Values.certs.secret.name }}
{{- else }}
{{- include "redis-operator.fullname" . }}-webhook-tls
{{- end }}
{{- end }}

{{/* image: include with (dict "root" $ "image" .Values.controller.image). */}}
{{- define "redis-operator.image" -}}
{{- printf "%s:%s" .image.repository (default (printf "v%s" .root.Chart.AppVersion) .image.tag) }}
{{- end }}

{{/* Pod security context: passes Pod Security "restricted". */}}
{{- define "redis-operator.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* Container security context: passes Pod Security "restricted". */}}
{{- define "redis-operator.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* POD_NAME and POD_NAMESPACE from the downward API. */}}
{{- define "redis-operator.podEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end }}

{{/* nodeSelector, tolerations, affinity, priorityClassName of a component's values. */}}
{{- define "redis-operator.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end }}

{{/*
One webhook of the admission configurations as files/<kind>-webhook.yaml has it (the copy
hack/run.sh and the e2e suite register too), with webhook.failurePolicy and
webhook.timeoutSeconds where they are set: include with (dict "root" $ "kind" "mutating"), then
fromYaml.
*/}}
{{- define "redis-operator.webhook.entry" -}}
{{- $entry := .root.Files.Get (printf "files/%s-webhook.yaml" .kind) | fromYaml }}
{{- with .root.Values.webhook.failurePolicy }}
{{- $_ := set $entry "failurePolicy" . }}
{{- end }}
{{- with .root.Values.webhook.timeoutSeconds }}
{{- $_ := set $entry "timeoutSeconds" . }}
{{- end }}
{{- toYaml $entry }}
{{- end }}

{{/*
The `webhooks:` list of a webhook configuration: the entry above, called at the release's
webhook Service on `path`, for the namespaces of webhook.namespaceSelector. Include with
(dict "root" $ "kind" "mutating" "path" "/mutate" "caBundle" $caBundle).
*/}}
{{- define "redis-operator.webhooks" -}}
{{- $entry := include "redis-operator.webhook.entry" . | fromYaml }}
{{- $service := dict "name" (include "redis-operator.webhook.name" .root) "namespace" .root.Release.Namespace "path" .path "port" .root.Values.webhook.service.port }}
{{- $client := dict "service" $service }}
{{- with .caBundle }}
{{- $_ := set $client "caBundle" . }}
{{- end }}
{{- $_ := set $entry "clientConfig" $client }}
{{- $_ = set $entry "namespaceSelector" .root.Values.webhook.namespaceSelector }}
{{- list $entry | toYaml }}
{{- end }}
