{{/* Chart name, overridable. */}}
{{- define "public-reviews.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-scoped prefix of every resource name; component suffixes keep names under 63 chars. */}}
{{- define "public-reviews.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Selector labels: immutable on Deployments, so never the version. */}}
{{- define "public-reviews.selectorLabels" -}}
app.kubernetes.io/name: {{ include "public-reviews.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "public-reviews.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "public-reviews.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: public-reviews
{{- end -}}

{{/* The services this chart runs: values key -> component name (= folder under services/). */}}
{{- define "public-reviews.components" -}}
readApi: read-api
mcpGateway: mcp-gateway
websubHub: websub-hub
{{- end -}}

{{- define "public-reviews.image" -}}
{{- $img := .Values.image -}}
{{- $repo := ternary (printf "%s/%s" $img.registry $img.repository) $img.repository (ne $img.registry "") -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $repo $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{- define "public-reviews.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "public-reviews.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "public-reviews.configMapName" -}}
{{- printf "%s-config" (include "public-reviews.fullname" .) -}}
{{- end -}}

{{- define "public-reviews.sessionSecretName" -}}
{{- default (printf "%s-mcp-session" (include "public-reviews.fullname" .)) .Values.mcp.session.existingSecret -}}
{{- end -}}

{{/*
Node loads the OpenTelemetry hooks before the service (ESM needs them registered first); they do
nothing unless otel.enabled. Usage: include "public-reviews.nodeArgs" "services/read-api/dist/main.js"
*/}}
{{- define "public-reviews.nodeArgs" -}}
- --import
- "@reviews/runtime/instrumentation"
- {{ . | quote }}
{{- end -}}

{{/* Writable paths under a read-only root filesystem: /tmp and the app's DATA_DIR (/app/.data). */}}
{{- define "public-reviews.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: data
  mountPath: /app/.data
{{- end -}}

{{- define "public-reviews.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
- name: data
  emptyDir:
    sizeLimit: 64Mi
{{- end -}}

{{/* Refuse settings that would kill pods before they drain. */}}
{{- define "public-reviews.validate" -}}
{{- $s := .Values.shutdown -}}
{{- $needed := add $s.preStopSleepSeconds (div (add $s.timeoutMs 999) 1000) -}}
{{- if lt (int $s.terminationGracePeriodSeconds) (int $needed) -}}
{{- fail (printf "shutdown.terminationGracePeriodSeconds (%v) must be at least shutdown.preStopSleepSeconds + shutdown.timeoutMs/1000 (%v)" $s.terminationGracePeriodSeconds $needed) -}}
{{- end -}}
{{- if gt (int .Values.websub.leaseMinSeconds) (int .Values.websub.leaseMaxSeconds) -}}
{{- fail "websub.leaseMinSeconds must not exceed websub.leaseMaxSeconds" -}}
{{- end -}}
{{- end -}}
