// Shared helpers for the deployment tests: the pinned Helm binary, rendering the chart, and
// checking rendered objects against the Kubernetes schemas.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments, parse } from 'yaml';
import { ConfigMap, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';

const run = promisify(execFile);

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
export const chartDir = join(repoRoot, 'helm/public-reviews');
export const KUBE_VERSION = '1.32.0';

/** Component name (= folder under services/) -> its values key. */
export const COMPONENTS = { 'read-api': 'readApi', 'mcp-gateway': 'mcpGateway', 'websub-hub': 'websubHub' } as const;
export type Component = keyof typeof COMPONENTS;

/**
 * The time the app always leaves its close hooks after the HTTP drain (CLOSE_HOOKS_FLOOR_MS in
 * libs/runtime/src/service.ts, not exported): read from the source so the chart's grace-period rule
 * follows it.
 */
export const closeHooksFloorMs = Number(/^const CLOSE_HOOKS_FLOOR_MS = ([\d_]+);$/m.exec(readFileSync(join(repoRoot, 'libs/runtime/src/service.ts'), 'utf8'))?.[1]?.replaceAll('_', ''));

/** The root package.json scripts: the commands the chart, the image and Tilt must agree with. */
export const npmScripts = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** Fetches (once, cached in .tools/) the sha256-pinned Helm and returns its path. */
export async function ensureHelm(): Promise<string> {
  const { stdout } = await run('bash', [join(repoRoot, 'scripts/ensure-helm.sh')], { cwd: repoRoot, maxBuffer: 1 << 20 });
  return stdout.trim().split('\n').at(-1) ?? '';
}

export interface HelmResult {
  readonly ok: boolean;
  readonly stdout: string;
  readonly stderr: string;
}

export async function helm(bin: string, args: readonly string[]): Promise<HelmResult> {
  try {
    const { stdout, stderr } = await run(bin, [...args], { cwd: repoRoot, maxBuffer: 16 << 20 });
    return { ok: true, stdout, stderr };
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    return { ok: false, stdout: e.stdout ?? '', stderr: e.stderr ?? String(error) };
  }
}

export interface K8sObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string>; readonly annotations?: Record<string, string> };
  readonly spec?: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered YAML, checked field by field
  readonly data?: Record<string, string>;
}

export function parseManifests(text: string, source: string): K8sObject[] {
  return parseAllDocuments(text).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`${source}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = doc.toJS() as K8sObject | null;
    return value === null ? [] : [value];
  });
}

/** `helm template` with the given values files (relative to the chart); throws with Helm's message on failure. */
export async function renderChart(bin: string, valuesFiles: readonly string[], release = 'test-release'): Promise<K8sObject[]> {
  const args = ['template', release, chartDir, '--namespace', 'reviews', '--kube-version', KUBE_VERSION];
  for (const file of valuesFiles) args.push('-f', join(chartDir, file));
  const result = await helm(bin, args);
  if (!result.ok) throw new Error(`helm ${args.join(' ')} failed:\n${result.stderr}`);
  return parseManifests(result.stdout, `helm template ${valuesFiles.join(' ')}`);
}

type ModelClass = new (data: never) => { validate(): void };
const MODELS: Record<string, ModelClass> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/Ingress': Ingress,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'batch/v1/Job': Job,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};

/** Validates against the Kubernetes (or Prometheus Operator) schema; a kind we have no schema for is an error. */
export function validateObject(object: K8sObject): void {
  const Model = MODELS[`${object.apiVersion}/${object.kind}`];
  if (!Model) throw new Error(`${object.kind}/${object.metadata.name}: no schema for ${object.apiVersion} ${object.kind}`);
  try {
    new Model(object as never).validate();
  } catch (error) {
    throw new Error(`${object.kind}/${object.metadata.name}: ${(error as Error).message}`);
  }
}

export function readYaml(path: string): unknown {
  return parse(readFileSync(join(repoRoot, path), 'utf8'));
}

/** True when every label in `selector` is present with the same value in `labels`. */
export function selects(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}
