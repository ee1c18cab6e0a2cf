{{/*
Deployment + Service (+ HPA, + PDB) of one service. Called as
  include "public-reviews.workload" (dict "root" $ "component" "read-api" "cfg" .Values.services.readApi)
*/}}
{{- define "public-reviews.workload" -}}
{{- $root := .root -}}
{{- $component := .component -}}
{{- $cfg := .cfg -}}
{{- $fullname := printf "%s-%s" (include "public-reviews.fullname" $root) $component -}}
{{- $selector := printf "%s\napp.kubernetes.io/component: %s" (include "public-reviews.selectorLabels" $root) $component -}}
{{- $labels := printf "%s\napp.kubernetes.io/component: %s" (include "public-reviews.labels" $root) $component -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $fullname }}
  labels:
    {{- $labels | nindent 4 }}
spec:
  {{- if not $cfg.autoscaling.enabled }}
  replicas: {{ $cfg.replicaCount }}
  {{- else }}
  {{- /* Dropping replicas from a live Deployment resets it to 1 until the HPA acts: keep what runs. */}}
  {{- $live := lookup "apps/v1" "Deployment" $root.Release.Namespace $fullname }}
  {{- if $live }}
  replicas: {{ $live.spec.replicas }}
  {{- end }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- $selector | nindent 6 }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 0
  template:
    metadata:
      labels:
        {{- $labels | nindent 8 }}
      annotations:
        checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        {{- if and (eq $component "mcp-gateway") (not $root.Values.mcp.session.existingSecret) }}
        {{- /* Pods keep the key they started with: a new one (the Secret deleted to rotate it) must reach
        every replica at once, or each answers 404 to the sessions the others signed. */}}
        checksum/mcp-session: {{ include "public-reviews.generatedSessionKey" $root | sha256sum }}
        {{- end }}
        {{- with $cfg.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "public-reviews.serviceAccountName" $root | quote }}
      automountServiceAccountToken: false
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- range . }}
        - name: {{ . | quote }}
        {{- end }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: {{ $root.Values.shutdown.terminationGracePeriodSeconds }}
      {{- if $root.Values.topologySpread.enabled }}
      topologySpreadConstraints:
        {{- range $root.Values.topologySpread.topologyKeys }}
        - maxSkew: {{ $root.Values.topologySpread.maxSkew }}
          topologyKey: {{ . }}
          whenUnsatisfiable: {{ $root.Values.topologySpread.whenUnsatisfiable }}
          labelSelector:
            matchLabels:
              {{- $selector | nindent 14 }}
        {{- end }}
      {{- end }}
      {{- with $cfg.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $cfg.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $cfg.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ $component }}
          image: {{ include "public-reviews.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args:
            {{- include "public-reviews.nodeArgs" (printf "services/%s/dist/main.js" $component) | nindent 12 }}
          ports:
            - name: http
              containerPort: 8080
              protocol: TCP
            - name: metrics
              containerPort: 9464
              protocol: TCP
          envFrom:
            - configMapRef:
                name: {{ include "public-reviews.configMapName" $root }}
          env:
            - name: OTEL_SERVICE_NAME
              value: {{ $component }}
            {{- include "public-reviews.natsUrlFromSecret" $root | nindent 12 }}
            {{- include "public-reviews.natsFilesEnv" $root | trim | nindent 12 }}
            {{- if eq $component "mcp-gateway" }}
            - name: MCP_SESSION_SECRET
              valueFrom:
                secretKeyRef:
                  name: {{ include "public-reviews.sessionSecretName" $root | quote }}
                  key: {{ $root.Values.mcp.session.existingSecretKey | quote }}
            {{- end }}
            {{- with $cfg.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          startupProbe:
            httpGet: { path: /healthz, port: http }
            {{- toYaml $root.Values.probes.startup | nindent 12 }}
          livenessProbe:
            httpGet: { path: /healthz, port: http }
            {{- toYaml $root.Values.probes.liveness | nindent 12 }}
          readinessProbe:
            httpGet: { path: /readyz, port: http }
            {{- toYaml $root.Values.probes.readiness | nindent 12 }}
          lifecycle:
            # Keep serving while endpoints and load balancers drop this pod; no shell needed.
            preStop:
              sleep:
                seconds: {{ $root.Values.shutdown.preStopSleepSeconds }}
          resources:
            {{- toYaml $cfg.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.containerSecurityContext | nindent 12 }}
          volumeMounts:
            {{- include "public-reviews.volumeMounts" $root | nindent 12 }}
            {{- with $cfg.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        {{- include "public-reviews.volumes" $root | nindent 8 }}
        {{- with $cfg.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $fullname }}
  labels:
    {{- $labels | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- $selector | nindent 4 }}
  ports:
    - name: http
      port: 8080
      targetPort: http
      protocol: TCP
    - name: metrics
      port: 9464
      targetPort: metrics
      protocol: TCP
{{- if $cfg.autoscaling.enabled }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ $fullname }}
  labels:
    {{- $labels | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ $fullname }}
  minReplicas: {{ $cfg.autoscaling.minReplicas }}
  maxReplicas: {{ $cfg.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $cfg.autoscaling.targetCPUUtilizationPercentage }}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: {{ $cfg.autoscaling.scaleDownStabilizationSeconds }}
{{- end }}
{{- /* A PDB on a single replica would block node drains forever. */}}
{{- if or $cfg.autoscaling.enabled (gt (int $cfg.replicaCount) 1) }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $fullname }}
  labels:
    {{- $labels | nindent 4 }}
spec:
  maxUnavailable: {{ $cfg.pdb.maxUnavailable }}
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels:
      {{- $selector | nindent 6 }}
{{- end }}
{{- end -}}
