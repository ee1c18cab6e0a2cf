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
{{- /* Helm takes a release name with dots; a Service name (RFC 1035 label) takes none. */ -}}
{{- $release := .Release.Name | replace "." "-" -}}
{{- if contains $name $release -}}
{{- $release | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" $release $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Selector labels: immutable on Deployments, so never the version. */}}
{{- define "public-reviews.selectorLabels" -}}
app.kubernetes.io/name: {{ include "public-reviews.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end -}}

{{/* The version that runs: the image tag when one is set (an upgrade by tag), else the chart's appVersion. */}}
{{- define "public-reviews.version" -}}
{{- default .Chart.AppVersion (include "public-reviews.asString" (list .Values.image.tag "image.tag")) -}}
{{- end -}}

{{/*
A value the schema takes as a string of digits or as an integer, as that string: helm --set makes 20261128
an integer. A number from a values file or --set-json is a float, read as YAML reads numbers (0123456, an
all-digit short SHA, is the octal 42798; 1e3 is 1000), so its digits are not the ones written: refused.
Usage: include "public-reviews.asString" (list .Values.image.tag "image.tag")
*/}}
{{- define "public-reviews.asString" -}}
{{- $value := index . 0 -}}
{{- if kindIs "float64" $value -}}
{{- fail (printf "%s: %v is a number from a values file or --set-json, which reads it as YAML reads numbers (0123456 is octal, 1e3 is 1000): write it quoted, as a string" (index . 1) $value) -}}
{{- end -}}
{{- $value -}}
{{- end -}}

{{- define "public-reviews.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "public-reviews.selectorLabels" . }}
{{- /* A label value is at most 63 characters and begins and ends with a letter or digit; a tag may run
to 128, begin with _ and end with . _ or -, which the API server would refuse. */}}
app.kubernetes.io/version: {{ include "public-reviews.version" . | trunc 63 | trimAll "-._" | quote }}
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
{{- printf "%s:%s" $repo (default .Chart.AppVersion (include "public-reviews.asString" (list $img.tag "image.tag"))) -}}
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

{{/*
NATS_URL from nats.existingSecret, for a URL that carries credentials (kept out of the ConfigMap);
nothing when the URL comes from nats.url through the ConfigMap. Usage: include "public-reviews.natsUrlFromSecret" $root
*/}}
{{- define "public-reviews.natsUrlFromSecret" -}}
{{- if .Values.nats.existingSecret -}}
- name: NATS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.nats.existingSecret | quote }}
      key: {{ .Values.nats.existingSecretKey | quote }}
{{- end -}}
{{- end -}}

{{/*
The files nats.credsSecret, nats.nkeySecret and nats.tls.existingSecret hold, as the services read
them: environment (NATS_CREDS, NATS_NKEY, NATS_CERT, NATS_KEY, NATS_CA), volume mounts and volumes,
for every pod and the seed Job. Each whole Secret is mounted, so a key it lacks stops the process at start naming the variable
and the missing file, in the pod's log. Usage: include "public-reviews.natsFilesEnv" $root
*/}}
{{- define "public-reviews.natsFilesEnv" -}}
{{- with .Values.nats.credsSecret }}
- name: NATS_CREDS
  value: {{ printf "/etc/nats/creds/%s" $.Values.nats.credsSecretKey | quote }}
{{- end }}
{{- with .Values.nats.nkeySecret }}
- name: NATS_NKEY
  value: {{ printf "/etc/nats/nkey/%s" $.Values.nats.nkeySecretKey | quote }}
{{- end }}
{{- with .Values.nats.tls }}
{{- if .existingSecret }}
{{- with .certKey }}
- name: NATS_CERT
  value: {{ printf "/etc/nats/tls/%s" . | quote }}
{{- end }}
{{- with .keyKey }}
- name: NATS_KEY
  value: {{ printf "/etc/nats/tls/%s" . | quote }}
{{- end }}
{{- with .caKey }}
- name: NATS_CA
  value: {{ printf "/etc/nats/tls/%s" . | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "public-reviews.natsFilesMounts" -}}
{{- if .Values.nats.credsSecret }}
- name: nats-creds
  mountPath: /etc/nats/creds
  readOnly: true
{{- end }}
{{- if .Values.nats.nkeySecret }}
- name: nats-nkey
  mountPath: /etc/nats/nkey
  readOnly: true
{{- end }}
{{- if .Values.nats.tls.existingSecret }}
- name: nats-tls
  mountPath: /etc/nats/tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "public-reviews.natsFilesVolumes" -}}
{{- with .Values.nats.credsSecret }}
- name: nats-creds
  secret:
    secretName: {{ . | quote }}
{{- end }}
{{- with .Values.nats.nkeySecret }}
- name: nats-nkey
  secret:
    secretName: {{ . | quote }}
{{- end }}
{{- with .Values.nats.tls.existingSecret }}
- name: nats-tls
  secret:
    secretName: {{ . | quote }}
{{- end }}
{{- end -}}

{{- define "public-reviews.sessionSecretName" -}}
{{- default (printf "%s-mcp-session" (include "public-reviews.fullname" .)) .Values.mcp.session.existingSecret -}}
{{- end -}}

{{/*
The generated MCP session key, base64: the one the Secret already holds, so an upgrade keeps every open
session, else a new one (at install, and on every `helm template`, where lookup finds nothing). Chosen
once per render and kept on the root context, so the Secret and the checksum on the mcp-gateway pods
name the same key.
*/}}
{{- define "public-reviews.generatedSessionKey" -}}
{{- if not (hasKey . "generatedSessionKey") }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "public-reviews.sessionSecretName" .) }}
{{- $key := .Values.mcp.session.existingSecretKey }}
{{- if and $existing (index ($existing.data | default dict) $key) }}
{{- $_ := set . "generatedSessionKey" (index $existing.data $key) }}
{{- else }}
{{- $_ := set . "generatedSessionKey" (randAlphaNum 48 | b64enc) }}
{{- end }}
{{- end }}
{{- .generatedSessionKey }}
{{- end -}}

{{/*
Node loads the runtime's preload before the service: it sets the V8 flags the services run with
(no allocation-site pretenuring, ADR 0009) and registers the OpenTelemetry hooks (ESM needs them
registered first), which do nothing unless otel.enabled. Usage: include "public-reviews.nodeArgs" "services/read-api/dist/main.js"
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
{{- include "public-reviews.natsFilesMounts" . }}
{{- end -}}

{{- define "public-reviews.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
- name: data
  emptyDir:
    sizeLimit: 64Mi
{{- include "public-reviews.natsFilesVolumes" . }}
{{- end -}}

{{/*
Refuse at render time what Kubernetes or the services would refuse later, with the value to fix.
The services' own rules are those of EnvSchema in libs/runtime/src/config.ts.
*/}}
{{- define "public-reviews.validate" -}}
{{- $s := .Values.shutdown -}}
{{- /* After SIGTERM the app drains HTTP within timeoutMs, then always leaves its close hooks (NATS
drain) at least 1 s (CLOSE_HOOKS_FLOOR_MS in libs/runtime/src/service.ts). */ -}}
{{- $needed := add $s.preStopSleepSeconds (div (add $s.timeoutMs 999) 1000) 1 -}}
{{- if lt (int $s.terminationGracePeriodSeconds) (int $needed) -}}
{{- fail (printf "shutdown.terminationGracePeriodSeconds (%v) must be at least shutdown.preStopSleepSeconds + ceil(shutdown.timeoutMs/1000) + 1 s the app keeps for its close hooks (%v)" $s.terminationGracePeriodSeconds $needed) -}}
{{- end -}}
{{- if and (not .Values.nats.existingSecret) (contains "@" .Values.nats.url) -}}
{{- fail "nats.url holds credentials (user:password@ or token@), which would go into a ConfigMap and helm's output: put the URL in a Secret and name it in nats.existingSecret" -}}
{{- end -}}
{{- /* The NetworkPolicy opens one NATS port: a URL on another would hang every pod at connect. A URL from
nats.existingSecret is not known here. */ -}}
{{- if not .Values.nats.existingSecret -}}
{{- $urls := splitList "," .Values.nats.url -}}
{{- $tls := 0 -}}
{{- range $urls -}}{{- if hasPrefix "tls://" (lower (trim .)) -}}{{- $tls = add1 $tls -}}{{- end -}}{{- end -}}
{{- if and (gt $tls 0) (lt $tls (len $urls)) -}}
{{- fail "nats.url: the server URLs mix tls:// with other schemes; one connection either requires TLS or does not (the services refuse it at start)" -}}
{{- end -}}
{{- if .Values.networkPolicy.enabled -}}
{{- range $url := $urls -}}
{{- $authority := regexReplaceAll "^[A-Za-z][A-Za-z0-9+.-]*://" (trim $url) "" | trimSuffix "/" -}}
{{- $port := include "public-reviews.portOf" (dict "authority" $authority "default" "4222") -}}
{{- if ne (int $port) (int $.Values.networkPolicy.natsPort) -}}
{{- fail (printf "nats.url names port %s, but the NetworkPolicy opens egress to NATS on networkPolicy.natsPort (%v) only: set networkPolicy.natsPort to %s" $port $.Values.networkPolicy.natsPort $port) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and .Values.nats.credsSecret .Values.nats.nkeySecret -}}
{{- fail "nats.credsSecret and nats.nkeySecret: set one, not both: a creds file carries its own NKey seed (the services refuse NATS_NKEY with NATS_CREDS)" -}}
{{- end -}}
{{- $t := .Values.nats.tls -}}
{{- if and $t.existingSecret (ne (empty $t.certKey) (empty $t.keyKey)) -}}
{{- fail "nats.tls.certKey and nats.tls.keyKey name a client certificate and its key: set both, or empty both for a CA alone" -}}
{{- end -}}
{{- if and $t.existingSecret (empty $t.certKey) (empty $t.caKey) -}}
{{- fail "nats.tls.existingSecret names no file: set nats.tls.certKey and keyKey (a client certificate), nats.tls.caKey (a CA), or both" -}}
{{- end -}}
{{- $w := .Values.websub -}}
{{- if gt (int $w.leaseMinSeconds) (int $w.leaseMaxSeconds) -}}
{{- fail (printf "websub.leaseMinSeconds (%v) must not exceed websub.leaseMaxSeconds (%v)" $w.leaseMinSeconds $w.leaseMaxSeconds) -}}
{{- end -}}
{{- if or (lt (int $w.leaseDefaultSeconds) (int $w.leaseMinSeconds)) (gt (int $w.leaseDefaultSeconds) (int $w.leaseMaxSeconds)) -}}
{{- fail (printf "websub.leaseDefaultSeconds (%v) must lie between websub.leaseMinSeconds (%v) and websub.leaseMaxSeconds (%v)" $w.leaseDefaultSeconds $w.leaseMinSeconds $w.leaseMaxSeconds) -}}
{{- end -}}
{{- range $key, $component := include "public-reviews.components" . | fromYaml -}}
{{- $cfg := index $.Values.services $key -}}
{{- $a := $cfg.autoscaling -}}
{{- if and $a.enabled (gt (int $a.minReplicas) (int $a.maxReplicas)) -}}
{{- fail (printf "services.%s.autoscaling.minReplicas (%v) must not exceed services.%s.autoscaling.maxReplicas (%v)" $key $a.minReplicas $key $a.maxReplicas) -}}
{{- end -}}
{{- include "public-reviews.validateExtraVolumes" (dict "path" (printf "services.%s" $key) "cfg" $cfg) -}}
{{- end -}}
{{- include "public-reviews.validateExtraVolumes" (dict "path" "seed" "cfg" .Values.seed) -}}
{{- $sm := .Values.metrics.serviceMonitor -}}
{{- /* The Prometheus Operator refuses such a ServiceMonitor: nothing would be scraped and, with no `up` series, nothing would alert. */ -}}
{{- if and $sm.enabled (gt (int64 (include "public-reviews.durationMs" $sm.scrapeTimeout)) (int64 (include "public-reviews.durationMs" $sm.interval))) -}}
{{- fail (printf "metrics.serviceMonitor.scrapeTimeout (%s) must not exceed metrics.serviceMonitor.interval (%s): the Prometheus Operator refuses such a ServiceMonitor" $sm.scrapeTimeout $sm.interval) -}}
{{- end -}}
{{- end -}}

{{/* Milliseconds in a duration of one unit as values.schema.json allows them (`500ms`, `10s`, `1m`, `1h`). */}}
{{- define "public-reviews.durationMs" -}}
{{- $unit := regexFind "(ms|s|m|h)$" . -}}
{{- mul (regexFind "^[0-9]+" . | int64) (get (dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000) $unit) -}}
{{- end -}}

{{/* extraVolumes must not reuse the chart's volume names; extraVolumeMounts must name a volume the pod has, at a path the chart does not mount. */}}
{{- define "public-reviews.validateExtraVolumes" -}}
{{- $own := list "tmp" "data" "nats-creds" "nats-nkey" "nats-tls" -}}
{{- $names := $own -}}
{{- range .cfg.extraVolumes -}}
{{- if has .name $own -}}
{{- fail (printf "%s.extraVolumes: the name %q is taken by the chart's own volumes (%s); choose another" $.path .name (join ", " $own)) -}}
{{- end -}}
{{- $names = append $names .name -}}
{{- end -}}
{{- range .cfg.extraVolumeMounts -}}
{{- if has .mountPath (list "/tmp" "/app/.data" "/etc/nats/creds" "/etc/nats/nkey" "/etc/nats/tls") -}}
{{- fail (printf "%s.extraVolumeMounts: %s is already mounted by the chart" $.path .mountPath) -}}
{{- end -}}
{{- if not (has .name $names) -}}
{{- fail (printf "%s.extraVolumeMounts: volume %q is not defined in %s.extraVolumes" $.path .name $.path) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The port a URL's authority (host[:port]) names, else `default` (the scheme's, or the protocol's).
Usage: include "public-reviews.portOf" (dict "authority" "nats.nats:4222" "default" "4222")
*/}}
{{- define "public-reviews.portOf" -}}
{{- if regexMatch ":[0-9]+$" .authority -}}
{{- regexReplaceAll "^.*:([0-9]+)$" .authority "${1}" -}}
{{- else -}}
{{- .default -}}
{{- end -}}
{{- end -}}
