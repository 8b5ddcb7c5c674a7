{{/* The image every Deployment runs: repository:tag, or repository@digest when a digest is set. */}}
{{- define "caldera.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/* caldera-config's data: the settings the worker and the forwarder share. */}}
{{- define "caldera.config" -}}
TEMPORAL_ADDRESS: {{ .Values.temporal.address | quote }}
TEMPORAL_NAMESPACE: {{ .Values.temporal.namespace | quote }}
CALDERA_LOG_FORMAT: {{ .Values.logFormat | quote }}
{{- if .Values.temporal.tls.enabled }}
TEMPORAL_TLS_CERT: /etc/caldera/temporal-tls/tls.crt
TEMPORAL_TLS_KEY: /etc/caldera/temporal-tls/tls.key
TEMPORAL_TLS_CA: /etc/caldera/temporal-tls/ca.crt
{{- end }}
{{- with .Values.temporal.tls.serverName }}
TEMPORAL_TLS_SERVER_NAME: {{ . | quote }}
{{- end }}
{{- with .Values.taskQueue }}
CALDERA_TASK_QUEUE: {{ . | quote }}
{{- end }}
{{- with .Values.schedulerNames }}
CALDERA_SCHEDULERS: {{ . | quote }}
{{- end }}
{{- with .Values.schedulerOverride }}
CALDERA_SCHEDULER_OVERRIDE: {{ . | quote }}
{{- end }}
{{- end }}

{{/* The webhook registration's annotations: cert-manager's CA injection in that mode. */}}
{{- define "caldera.webhookAnnotations" -}}
{{- if eq .Values.webhook.tls.mode "cert-manager" -}}
cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/caldera-webhook
{{- end -}}
{{- end }}
