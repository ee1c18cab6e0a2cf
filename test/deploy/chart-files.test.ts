// Dashboards and alert rules live in deploy/ (design card §2); Helm can only read files inside the
// chart, so the chart carries byte-identical copies (ADR 0005). These tests fail when they drift
// and check that the chart packages them the way Grafana and the Prometheus Operator expect.
import { describe, it, expect, beforeAll } from '@jest/globals';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { chartDir, ensureHelm, helm, parseManifests, renderChart, repoRoot, type K8sObject } from './support/chart.js';

const listFiles = (dir: string, suffix: string): string[] => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(suffix)).sort() : []);
const read = (dir: string, file: string): string => readFileSync(join(dir, file), 'utf8');

const dashboardsSource = join(repoRoot, 'deploy/grafana');
const dashboardsCopy = join(chartDir, 'files/dashboards');
const rulesSource = join(repoRoot, 'deploy/prometheus');
const rulesCopy = join(chartDir, 'files/rules');
// deploy/prometheus also holds promtool unit tests; only files with rule groups belong in the chart.
const ruleFiles = listFiles(rulesSource, '.yaml').filter((f) => (parse(read(rulesSource, f)) as { groups?: unknown } | null)?.groups !== undefined);

describe('chart copies of deploy/ files', () => {
  it.each([
    ['deploy/grafana/*.json', dashboardsSource, dashboardsCopy, listFiles(dashboardsSource, '.json'), 'files/dashboards'],
    ['deploy/prometheus rule files', rulesSource, rulesCopy, ruleFiles, 'files/rules'],
  ])('%s are copied byte for byte, and nothing else is', (_name, sourceDir, copyDir, sources, copyName) => {
    const copies = listFiles(copyDir, sourceDir === dashboardsSource ? '.json' : '.yaml');
    expect({ [copyName]: copies }).toEqual({ [copyName]: sources });
    for (const file of sources) {
      expect({ file, equal: read(copyDir, file) === read(sourceDir, file) }).toEqual({ file, equal: true });
    }
  });
});

describe('packaged for Grafana and Prometheus (everything-on values)', () => {
  let objects: K8sObject[] = [];
  beforeAll(async () => {
    objects = await renderChart(await ensureHelm(), ['ci/all-on-values.yaml']);
  }, 120_000);

  it('one ConfigMap per dashboard, labelled for the Grafana sidecar, holding the JSON unchanged', () => {
    const maps = objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.labels?.grafana_dashboard === '1');
    const files = listFiles(dashboardsCopy, '.json');
    expect(maps.flatMap((m) => Object.keys(m.data ?? {})).sort()).toEqual(files);
    for (const map of maps) {
      expect(map.metadata.annotations?.grafana_folder).toBe('Public Reviews');
      for (const [file, json] of Object.entries(map.data ?? {})) expect(JSON.parse(json)).toEqual(JSON.parse(read(dashboardsCopy, file)));
    }
  });

  it('one PrometheusRule with every rule group, expressions and templates untouched', () => {
    const rules = objects.filter((o) => o.kind === 'PrometheusRule');
    const expected = listFiles(rulesCopy, '.yaml').flatMap((f) => (parse(read(rulesCopy, f)) as { groups: unknown[] }).groups);
    if (expected.length === 0) {
      expect(rules).toEqual([]);
      return;
    }
    expect(rules).toHaveLength(1);
    expect(rules[0]?.spec.groups).toEqual(expected);
  });
});

describe('runbook links of the PrometheusRule', () => {
  type Rule = { alert?: string; annotations?: Record<string, string> };
  const runbooks = async (set: string[]): Promise<Record<string, string | undefined>> => {
    const result = await helm(await ensureHelm(), ['template', 't', chartDir, '--set', 'baseUrl=https://reviews.example.com', '--set', 'metrics.prometheusRule.enabled=true', ...set]);
    if (!result.ok) throw new Error(result.stderr);
    const [rule] = parseManifests(result.stdout, 'runbookBaseUrl').filter((o) => o.kind === 'PrometheusRule');
    const rules = (rule?.spec.groups as { rules: Rule[] }[]).flatMap((group) => group.rules).filter((r) => r.alert !== undefined);
    return Object.fromEntries(rules.map((r) => [r.alert!, r.annotations?.runbook_url]));
  };

  it('join each alert\'s runbook path to metrics.prometheusRule.runbookBaseUrl, with or without its trailing slash, and keep the path without one', async () => {
    const relative = await runbooks([]);
    expect(Object.keys(relative).length).toBeGreaterThan(5);
    for (const [alert, url] of Object.entries(relative)) expect({ alert, url }).toEqual({ alert, url: `docs/operations.md#${alert.toLowerCase()}` });
    for (const base of ['https://git.example.com/acme/public-reviews/blob/v1.0.0', 'https://git.example.com/acme/public-reviews/blob/v1.0.0/', 'https://git.example.com/acme/public-reviews/blob/v1.0.0//']) {
      const absolute = await runbooks(['--set', `metrics.prometheusRule.runbookBaseUrl=${base}`]);
      expect(absolute).toEqual(Object.fromEntries(Object.keys(relative).map((alert) => [alert, `https://git.example.com/acme/public-reviews/blob/v1.0.0/docs/operations.md#${alert.toLowerCase()}`])));
    }
  }, 120_000);

  it.each(['docs.example.com/x', 'https:///docs', 'https://git.example.com/a b', 'https://git.example.com/a\u00a0b', 'https://git.example.com/x?ref=main', 'https://git.example.com/x#top', 'https://git.example.com/"x"'])(
    'refuses %j, which is no http(s) URL of a host and path',
    async (base) => {
      const result = await helm(await ensureHelm(), ['template', 't', chartDir, '--set', 'baseUrl=https://reviews.example.com', '--set-string', `metrics.prometheusRule.runbookBaseUrl=${base}`]);
      expect([result.ok, result.stderr]).toEqual([false, expect.stringContaining('runbookBaseUrl')]);
    },
    120_000,
  );

  // `helm upgrade --reuse-values` renders the new chart over the values of the release it upgrades, in place of
  // the chart's own defaults: values that may predate the key. A copy of the chart without it stands for that.
  it('renders without the key in the values, as an upgrade reusing an older release\'s values has them', async () => {
    const chart = join(mkdtempSync(join(tmpdir(), 'chart-')), 'public-reviews');
    cpSync(chartDir, chart, { recursive: true });
    const defaults = parse(read(chart, 'values.yaml')) as { metrics: { prometheusRule: Record<string, unknown> } };
    delete defaults.metrics.prometheusRule.runbookBaseUrl;
    writeFileSync(join(chart, 'values.yaml'), stringify(defaults));
    const result = await helm(await ensureHelm(), ['template', 't', chart, '--set', 'baseUrl=https://reviews.example.com', '--set', 'metrics.prometheusRule.enabled=true']);
    expect([result.ok, result.stderr]).toEqual([true, '']);
    rmSync(dirname(chart), { recursive: true, force: true });
  }, 120_000);
});
