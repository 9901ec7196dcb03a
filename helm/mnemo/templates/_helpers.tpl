{{/* Chart name. */}}
{{- define "mnemo.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name (63 characters at most: a DNS label). */}}
{{- define "mnemo.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mnemo.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mnemo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mnemo.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Selector of the server pods (the migration Job's pods carry component=migrate). */}}
{{- define "mnemo.serverSelectorLabels" -}}
{{ include "mnemo.selectorLabels" . }}
app.kubernetes.io/component: server
{{- end }}

{{- define "mnemo.labels" -}}
helm.sh/chart: {{ include "mnemo.chart" . }}
{{ include "mnemo.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "mnemo.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* Port number of metrics.addr ("host:port"). */}}
{{- define "mnemo.metricsPort" -}}
{{- .Values.metrics.addr | splitList ":" | last | int }}
{{- end }}

{{/* The Secret that a secrets.<entry> is read from: the chart's own (create=true) or the existing one. */}}
{{- define "mnemo.secretName" -}}
{{- if .root.Values.secrets.create }}
{{- include "mnemo.fullname" .root }}
{{- else }}
{{- .entry.existingSecret }}
{{- end }}
{{- end }}

{{/* Whether a secrets.<entry> is in use: a value (create=true) or an existing Secret name. */}}
{{- define "mnemo.secretUsed" -}}
{{- if .root.Values.secrets.create }}
{{- if .entry.value }}true{{ end }}
{{- else }}
{{- if .entry.existingSecret }}true{{ end }}
{{- end }}
{{- end }}

{{/* One env entry read from a secrets.<entry>, or nothing when the entry is unused. */}}
{{- define "mnemo.secretEnv" -}}
{{- if eq (include "mnemo.secretUsed" .) "true" }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "mnemo.secretName" . }}
      key: {{ .entry.key }}
      {{- if .entry.optional }}
      optional: true
      {{- end }}
{{- end }}
{{- end }}

{{/* The env entries read from Secrets. */}}
{{- define "mnemo.secretEnvs" -}}
{{- $root := . }}
{{- $s := .Values.secrets }}
{{- range $e := list (list "MNEMO_DATABASE_URL" $s.databaseUrl) (list "MNEMO_API_KEY" $s.apiKey) (list "MNEMO_RECEIPT_SIGNING_KEYS" $s.receiptSigningKeys) (list "MNEMO_OPENAI_API_KEY" $s.openaiApiKey) (list "MNEMO_WEBHOOK_SECRET" $s.webhookSecret) (list "MNEMO_APP_DATABASE_URL" $s.appDatabaseUrl) (list "MNEMO_READ_DATABASE_URL" $s.readDatabaseUrl) }}
{{- include "mnemo.secretEnv" (dict "root" $root "name" (index $e 0) "entry" (index $e 1)) }}
{{- end }}
{{- end }}

{{/* Fails the render when a required secret setting is missing. */}}
{{- define "mnemo.validateSecrets" -}}
{{- if .Values.secrets.create }}
{{- if not .Values.secrets.databaseUrl.value }}
{{- fail "secrets.create=true needs secrets.databaseUrl.value (postgres://user:pass@host:5432/db)" }}
{{- end }}
{{- if not .Values.secrets.apiKey.value }}
{{- fail "secrets.create=true needs secrets.apiKey.value: mnemo refuses to listen on 0.0.0.0 without an API key" }}
{{- end }}
{{- else }}
{{- if not .Values.secrets.databaseUrl.existingSecret }}
{{- fail "secrets.databaseUrl.existingSecret is required (or secrets.create=true with secrets.databaseUrl.value)" }}
{{- end }}
{{- if not .Values.secrets.apiKey.existingSecret }}
{{- fail "secrets.apiKey.existingSecret is required (or secrets.create=true with secrets.apiKey.value)" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Pod-level fields shared by the Deployment and the migration Job. */}}
{{- define "mnemo.podCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if .Values.serviceAccountName }}
serviceAccountName: {{ .Values.serviceAccountName }}
{{- end }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
