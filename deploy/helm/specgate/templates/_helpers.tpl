{{/* Names, labels and small shared fragments. */}}

{{- define "specgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "specgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "<fullname>-<suffix>", kept within 63 characters. Call with (list . "suffix"). */}}
{{- define "specgate.componentName" -}}
{{- $root := index . 0 -}}
{{- printf "%s-%s" (include "specgate.fullname" $root | trunc (int (sub 62 (len (index . 1))))) (index . 1) | trimSuffix "-" -}}
{{- end -}}

{{- define "specgate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "specgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "specgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "specgate.labels" -}}
helm.sh/chart: {{ include "specgate.chart" . }}
{{ include "specgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: specgate
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels of one component. Call with (list . "engine"). */}}
{{- define "specgate.componentLabels" -}}
{{ include "specgate.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "specgate.componentSelectorLabels" -}}
{{ include "specgate.selectorLabels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* The specgate image (exporter, gate hook, serve, controller). */}}
{{- define "specgate.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The engine image of the selected kind. */}}
{{- define "specgate.engineImage" -}}
{{- $img := index .Values.engine.images .Values.engine.kind -}}
{{- printf "%s:%s" $img.repository $img.tag -}}
{{- end -}}

{{/* True (non-empty) when the values enable a drafter: speculative decoding is configured. */}}
{{- define "specgate.drafterEnabled" -}}
{{- if .Values.engine.speculativeConfig -}}true{{- end -}}
{{- end -}}

{{/* True when the cluster serves the Prometheus Operator API. */}}
{{- define "specgate.hasMonitoringAPI" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" -}}true{{- end -}}
{{- end -}}

{{/* True when the cluster serves grafana-operator's API (GrafanaDashboard). */}}
{{- define "specgate.hasGrafanaAPI" -}}
{{- if .Capabilities.APIVersions.Has "grafana.integreatly.org/v1beta1" -}}true{{- end -}}
{{- end -}}

{{/* How a ServiceMonitor endpoint / PodMonitor podMetricsEndpoint scrapes `specgate serve` over HTTPS
(serve.tls.secretName set): verify the certificate for the Service's DNS name, against caKey of the same
Secret when given (else the scraper's system CAs). Nothing when serve speaks plain HTTP. */}}
{{- define "specgate.gateScrapeTLS" -}}
{{- $t := .Values.serve.tls -}}
{{- if $t.secretName }}
scheme: https
tlsConfig:
  serverName: {{ printf "%s.%s.svc" (include "specgate.componentName" (list . "serve")) .Release.Namespace | quote }}
  {{- if $t.caKey }}
  ca:
    secret:
      name: {{ $t.secretName | quote }}
      key: {{ $t.caKey | quote }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* The plan must be given whenever something runs the gate on it. Call with (list . "who needs it"). */}}
{{- define "specgate.requirePlan" -}}
{{- if not (index . 0).Values.gate.plan -}}
{{- fail (printf "gate.plan is required when %s" (index . 1)) -}}
{{- end -}}
{{- end -}}

{{/* Environment of every specgate process: no bytecode writes on a read-only root filesystem. */}}
{{- define "specgate.pythonEnv" -}}
- name: PYTHONDONTWRITEBYTECODE
  value: "1"
- name: PYTHONUNBUFFERED
  value: "1"
- name: HOME
  value: /tmp
{{- end -}}

{{/* The writable /tmp of a specgate container (read-only root filesystem). */}}
{{- define "specgate.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- end -}}

{{- define "specgate.podSecurityContext" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end -}}

{{- define "specgate.containerSecurityContext" -}}
securityContext:
  {{- toYaml .Values.containerSecurityContext | nindent 2 }}
{{- end -}}

{{/* Rules for reading the evidence the gate uses: pods (start and Ready times, image digests), Deployments, Events. */}}
{{- define "specgate.readRules" -}}
- apiGroups: [""]
  resources: ["pods", "events"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch"]
{{- end -}}

{{/*
The plan ConfigMap's data: plan.yaml plus planFiles. The plan is judged as the engine runs (issue 37 item 1): the
engine's simulation variables in engine.extraEnv go into plan engine.env (a valueFrom, unread here, as a value that
is no number, so simulation is never ruled out), and the rejection / simulation knobs of engine.speculativeConfig
into plan engine.speculative (vLLM's keys as they are; SGLang's flags with their speculative_ prefix); the chart's
values win. A plan without engine.speculative, or values setting none of these, is rendered as given. The names
are gate.model.invariants.SIMULATION_ENV's and the plan's Speculative keys (tests/helm/test_chart_simulated.py).
*/}}
{{- define "specgate.planData" -}}
{{- $plan := deepCopy .Values.gate.plan -}}
{{- $engine := .Values.engine -}}
{{- if and $plan (kindIs "map" $plan.engine) -}}
{{- $env := dict -}}
{{- range $engine.extraEnv -}}
{{- if has .name (list "SGLANG_SIMULATE_ACC_LEN" "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS") -}}
{{- if and (hasKey . "value") (not (kindIs "invalid" .value)) -}}
{{- $_ := set $env .name (toString .value) -}}
{{- else -}}
{{- $_ := set $env .name "<valueFrom: not read by the chart>" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $env -}}
{{- $_ := set $plan.engine "env" (merge $env (default (dict) $plan.engine.env)) -}}
{{- end -}}
{{- if kindIs "map" $plan.engine.speculative -}}
{{- $knobs := dict -}}
{{- if eq $engine.kind "vllm" -}}
{{- $knobs = dict "rejection_sample_method" "rejection_sample_method" "synthetic_acceptance_length" "synthetic_acceptance_length" "synthetic_acceptance_rates" "synthetic_acceptance_rates" "draft_sample_method" "draft_sample_method" "enable_adaptive_verification" "enable_adaptive_verification" -}}
{{- else if eq $engine.kind "sglang" -}}
{{- $knobs = dict "use_block_verification" "speculative_use_block_verification" "use_rejection_sampling" "speculative_use_rejection_sampling" -}}
{{- end -}}
{{- range $from, $to := $knobs -}}
{{- if hasKey (default (dict) $engine.speculativeConfig) $from -}}
{{- $_ := set $plan.engine.speculative $to (index $engine.speculativeConfig $from) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
plan.yaml: |
  {{- toYaml $plan | nindent 2 }}
{{- range $name, $content := .Values.gate.planFiles }}
{{ $name }}: |
  {{- $content | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A rendered env value: strings as they are, numbers without exponent notation (toJson). */}}
{{- define "specgate.envValue" -}}
{{- if kindIs "string" . -}}{{ . | quote }}{{- else -}}{{ toJson . | quote }}{{- end -}}
{{- end -}}

{{/*
The exporter settings as rendered: values first; the SLO target and the workload demand default to what the
plan says (slo.target_acceptance_length; the largest mix's concurrency x (prompt + output) tokens; the drafter's
evidence.reported.acceptance_card, passed as JSON), so the alerts and the gate judge against the same numbers.
*/}}
{{- define "specgate.exporterSettings" -}}
{{- $s := deepCopy .Values.exporter.settings -}}
{{- $plan := .Values.gate.plan -}}
{{- if and (kindIs "invalid" $s.acceptanceSloTarget) $plan.slo -}}
{{- if not (kindIs "invalid" $plan.slo.target_acceptance_length) -}}
{{- $_ := set $s "acceptanceSloTarget" $plan.slo.target_acceptance_length -}}
{{- end -}}
{{- end -}}
{{- if and (kindIs "invalid" $s.workloadDemandTokens) $plan.workload -}}
{{- $demand := 0 -}}
{{- range $plan.workload -}}
{{- $t := mul (int64 .concurrency) (add (int64 .prompt_tokens) (int64 .output_tokens)) -}}
{{- if gt $t $demand -}}{{- $demand = $t -}}{{- end -}}
{{- end -}}
{{- $_ := set $s "workloadDemandTokens" $demand -}}
{{- end -}}
{{- if and (kindIs "invalid" $s.acceptanceCard) $plan.evidence -}}
{{- if $plan.evidence.reported -}}
{{- with $plan.evidence.reported.acceptance_card -}}
{{- $_ := set $s "acceptanceCard" . -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $s -}}
{{- end -}}

{{/* Annotation that rolls a gate pod when the plan changes. */}}
{{- define "specgate.planChecksum" -}}
checksum/plan: {{ include "specgate.planData" . | sha256sum }}
{{- end -}}
