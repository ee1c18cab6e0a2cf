import { describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createMetrics } from '@reviews/runtime';
import { alertRules, dashboardExpressions, loadDashboards, metricNames, prometheusDir, repoRoot, ruleExpressions } from './assets.js';

/** The job names the chart's ServiceMonitor gives the three services (jobLabel: app.kubernetes.io/component). */
const APP_JOBS = 'read-api|mcp-gateway|websub-hub';

/** Every selector of a metric in an expression: the matchers between braces ('' when it has none). */
function selectors(expr: string): { metric: string; matchers: string }[] {
  return metricNames(expr).flatMap((metric) =>
    [...expr.matchAll(new RegExp(`(?<![\\w:])${metric}(\\{[^}]*\\})?(?![\\w:])`, 'g'))].map((m) => ({ metric, matchers: m[1] ?? '' })),
  );
}

/** A dashboard expression as Grafana sends it: 1-minute step, 5-minute rate window, namespace reviews, every job, service and pod. */
function asQueried(expr: string): string {
  return expr
    .replaceAll('$__rate_interval', '5m')
    .replaceAll('$__interval', '1m')
    .replaceAll('$namespace', 'reviews')
    .replaceAll('$job', APP_JOBS)
    .replace(/\$[a-z]+/g, '.*');
}

/**
 * One counter scraped every 30 s, and the bars an event-count panel must draw for it at 4m10s, 5m10s, …
 * 10m10s ('_': no bar). Steps start on the minute; scrapes need not.
 */
const COUNTER_HISTORIES = [
  // increase() over windows as wide as the step drew 0 0 0 0 0 2 0: the first event fell between two
  // windows' samples, the second was extrapolated to two.
  { history: 'an event between two bars\' samples, then one inside a bar', values: '0x10 1x6 2x10', bars: '0 0 1 0 0 1 0' },
  { history: 'a new pod whose counter reads 1 at its first scrape', values: '_x10 1x16', bars: '_ 1 0 0 0 0 0' },
  { history: 'a container restarted in the same pod, counting 1 since', values: '2x10 stale 1x15', bars: '0 0 1 0 0 0 0' },
  { history: 'scrapes failing for over a bar, the counter unchanged, then 2 events', values: '0x5 1 stale stale stale stale 1x2 3x10', bars: '_ _ 0 2 0 0 0' },
  { history: 'a pod deleted 30 s after an event', values: '0x8 1 stale', bars: '0 1 _ _ _ _ _' },
];
const BAR_TIMES = ['4m10s', '5m10s', '6m10s', '7m10s', '8m10s', '9m10s', '10m10s'];

const promtool = spawnSync('promtool', ['--version']).status === 0 ? 'promtool' : null;
// CI installs Debian's prometheus package for promtool; locally a missing promtool must not hide failures in CI.
const itWithPromtool = promtool || process.env.CI ? it : it.skip;

describe('Grafana dashboards', () => {
  const dashboards = loadDashboards();

  it('exist for overview, MCP and WebSub with fixed, unique uids and ids left to Grafana', () => {
    expect(dashboards.map((d) => d.file).sort()).toEqual(['mcp.json', 'overview.json', 'websub.json']);
    const uids = dashboards.map((d) => d.dashboard.uid);
    expect(new Set(uids).size).toBe(uids.length);
    for (const { dashboard } of dashboards) {
      expect(dashboard.id).toBeNull();
      expect(dashboard.uid.length).toBeLessThanOrEqual(40);
      expect(dashboard.schemaVersion).toBe(39);
    }
  });

  it('use the datasource variable on every panel and target, with unique panel ids', () => {
    for (const { dashboard } of dashboards) {
      expect(dashboard.templating.list.find((v) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
      const ids = dashboard.panels.map((p) => p.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
        expect(panel.datasource?.uid).toBe('${datasource}');
        for (const target of panel.targets ?? []) expect(target.datasource?.uid).toBe('${datasource}');
      }
    }
  });

  it('rate and increase over $__rate_interval, never a hard-coded window', () => {
    for (const { file, title, expr } of dashboardExpressions()) {
      for (const [, , window] of expr.matchAll(/(rate|increase)\([^[]*\[([^\]]+)\]/g)) {
        expect({ file, title, window }).toEqual({ file, title, window: '$__rate_interval' });
      }
    }
  });

  it('are scoped to this application: a namespace variable, then the job, and both on every selector', () => {
    // One component per dashboard fixes its job; the overview spans all three and offers them as $job.
    const jobMatcher: Record<string, string> = { 'overview.json': 'job=~"$job"', 'mcp.json': 'job="mcp-gateway"', 'websub.json': 'job="websub-hub"' };
    for (const { file, dashboard } of dashboards) {
      const vars = dashboard.templating.list;
      expect({ file, order: vars.map((v) => v.name) }).toEqual({
        file,
        order: file === 'overview.json' ? ['datasource', 'namespace', 'job', 'service', 'pod'] : ['datasource', 'namespace', 'pod'],
      });
      const namespace = vars.find((v) => v.name === 'namespace') as unknown as { query: { query: string }; multi: boolean; includeAll: boolean };
      expect(namespace.query.query).toMatch(/^label_values\(up\{job=~?"(read-api\|mcp-gateway\|websub-hub|mcp-gateway|websub-hub)"\}, namespace\)$/);
      expect({ multi: namespace.multi, includeAll: namespace.includeAll }).toEqual({ multi: false, includeAll: false });
      for (const v of vars.filter((x) => x.type === 'query' && x.name !== 'namespace')) {
        expect({ file, variable: v.name, query: (v.query as { query: string }).query }).toEqual({ file, variable: v.name, query: expect.stringContaining('namespace="$namespace"') });
      }
      if (file === 'overview.json') expect(vars.find((v) => v.name === 'job')).toMatchObject({ includeAll: true, multi: true, allValue: APP_JOBS });
    }
    for (const { file, title, expr } of dashboardExpressions()) {
      for (const { metric, matchers } of selectors(expr)) {
        const scoped = matchers.includes('namespace="$namespace"') && matchers.includes(jobMatcher[file]!);
        expect({ file, title, metric, matchers, scoped }).toEqual({ file, title, metric, matchers, scoped: true });
      }
    }
  });

  it('filter the process panels by service like the request panels (default metrics carry the service label)', () => {
    const process = dashboardExpressions().filter(({ expr }) => /\b(process|nodejs)_/.test(expr));
    expect(process.map((p) => p.title).sort()).toEqual(['Event loop lag p99', 'Resident memory']);
    for (const { expr } of process) for (const { matchers } of selectors(expr)) expect(matchers).toContain('service=~"$service"');
  });

  it('list every pod in the service and pod variables, one that has served nothing yet included', async () => {
    // A fresh registry is a pod before its first request: the variables must read a series it already exports.
    const exposition = await createMetrics('read-api').registry.metrics();
    for (const { dashboard } of dashboards) {
      for (const variable of dashboard.templating.list.filter((v) => v.name === 'service' || v.name === 'pod')) {
        const query = typeof variable.query === 'string' ? variable.query : (variable.query as { query: string }).query;
        const [metric] = metricNames(query);
        // `up` is Prometheus's own series for every scraped target.
        expect([dashboard.uid, variable.name, metric === 'up' || exposition.includes(`\n${metric}{service="read-api"}`)]).toEqual([dashboard.uid, variable.name, true]);
      }
    }
  });

  it('show error ratios as 0, not "no data", while no series matches the numerator, and draw nothing rather than NaN without traffic', () => {
    const ratios = dashboardExpressions().filter(({ title }) => /\bratio\b/i.test(title));
    expect(ratios.map((r) => r.title).sort()).toEqual(['5xx ratio by service', 'Delivery failure ratio', 'Tool error ratio by tool']);
    for (const { title, expr } of ratios) {
      const shape = /^\((sum(?: by \([^)]*\) )?)\(rate\((\w+)\{([^}]*)\}\[\$__rate_interval\]\)\) or (.+) \* 0\) \/ \((.+) > 0\)$/.exec(expr);
      expect({ title, shape: shape !== null }).toEqual({ title, shape: true });
      const [, , , , zero, denominator] = shape!;
      expect({ title, zero }).toEqual({ title, zero: denominator });
    }
  });

  it('count only outcome="failure" as a failed delivery (410 Gone is not one)', () => {
    const failure = dashboardExpressions().find(({ title }) => title === 'Delivery failure ratio');
    expect(failure?.expr).toContain('outcome="failure"');
    for (const { expr } of dashboardExpressions()) expect(expr).not.toMatch(/outcome!=/);
  });

  itWithPromtool('contain only valid PromQL (checked by promtool)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dashboards-'));
    try {
      const rules = dashboardExpressions().map(({ expr }, i) => {
        return `      - record: dashboard:expr_${i}\n        expr: ${JSON.stringify(asQueried(expr))}`;
      });
      const file = join(dir, 'dashboards.rules.yaml');
      writeFileSync(file, `groups:\n  - name: dashboards\n    rules:\n${rules.join('\n')}\n`);
      execFileSync('promtool', ['check', 'rules', file], { stdio: 'pipe' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  itWithPromtool('count every refusal and denial in exactly one bar (the panels\' queries, run by promtool)', () => {
    const panels = [
      { title: 'Refused datasets', series: 'dataset_load_failures_total{namespace="reviews",job="read-api",service="read-api",pod="a",instance="10.0.0.7:8080",reason="invalid_json"}', bar: '{service="read-api",reason="invalid_json"}' },
      { title: 'Denials (removed subscriptions)', series: 'websub_denials_total{namespace="reviews",job="websub-hub",pod="h",instance="10.0.0.8:8080",reason="delivery-failed-3-times"}', bar: '{reason="delivery-failed-3-times"}' },
    ];
    const tests = panels.flatMap(({ title, series, bar }) => {
      const panel = loadDashboards().flatMap(({ dashboard }) => dashboard.panels).find((p) => p.title === title)!;
      // The description's 'at least 1 minute': two scrapes, so a bar is empty only while scrapes fail.
      expect({ title, interval: panel.interval }).toEqual({ title, interval: '1m' });
      const { expr } = panel.targets![0]!;
      return COUNTER_HISTORIES.map(({ history, values, bars }) => ({
        name: `${title}: ${history}`,
        interval: '30s',
        input_series: [{ series, values }],
        promql_expr_test: bars.split(' ').map((value, i) => ({
          expr: asQueried(expr),
          eval_time: BAR_TIMES[i],
          exp_samples: value === '_' ? [] : [{ labels: bar, value: Number(value) }],
        })),
      }));
    });
    const dir = mkdtempSync(join(tmpdir(), 'bars-'));
    try {
      const file = join(dir, 'bars.test.yaml');
      writeFileSync(file, stringify({ rule_files: [], evaluation_interval: '1m', tests }));
      const run = spawnSync('promtool', ['test', 'rules', file], { encoding: 'utf8' });
      expect(run.stdout + run.stderr).toContain('SUCCESS');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Prometheus alert rules', () => {
  itWithPromtool('pass promtool check rules', () => {
    const out = execFileSync('promtool', ['check', 'rules', join(prometheusDir, 'public-reviews.rules.yaml')], { encoding: 'utf8' });
    expect(out).toContain('SUCCESS');
  });

  itWithPromtool('pass their promtool unit tests', () => {
    const out = execFileSync('promtool', ['test', 'rules', 'public-reviews.rules.test.yaml'], { cwd: prometheusDir, encoding: 'utf8' });
    expect(out).toContain('SUCCESS');
  });

  it('select this application\'s jobs on every selector and keep namespace in every aggregation', () => {
    for (const { alert, expr } of ruleExpressions()) {
      for (const { metric, matchers } of selectors(expr)) expect({ alert, metric, matchers }).toEqual({ alert, metric, matchers: expect.stringContaining(`job=~"${APP_JOBS}"`) });
      // Aggregating without `by`, or through scalar(), would mix installations.
      expect({ alert, unscoped: /\b(sum|max|min|count|avg)\s*\(|\bscalar\(/.test(expr) }).toEqual({ alert, unscoped: false });
      for (const clause of expr.matchAll(/\b(by|on) \(([^)]*)\)/g)) expect({ alert, clause: clause[0] }).toEqual({ alert, clause: expect.stringMatching(/\bnamespace\b/) });
      expect(expr).not.toMatch(/outcome!=/);
    }
  });

  it('link each alert to its runbook section with runbook_url', () => {
    const doc = readFileSync(join(repoRoot, 'docs/operations.md'), 'utf8');
    for (const { alert, annotations } of alertRules()) {
      expect({ alert, keys: Object.keys(annotations ?? {}).sort() }).toEqual({ alert, keys: ['description', 'runbook_url', 'summary'] });
      expect(annotations?.runbook_url).toBe(`docs/operations.md#${alert.toLowerCase()}`);
      expect(doc).toContain(`\n### ${alert}\n`);
    }
  });

  it('cover a service down or serving no dataset, error ratio, latency, dataset divergence and staleness, NATS, deliveries, denials', () => {
    expect(ruleExpressions().map((r) => r.alert).sort()).toEqual(
      [
        'ReviewsDatasetDiverging',
        'ReviewsDatasetRejected',
        'ReviewsDatasetStale',
        'ReviewsHighErrorRatio',
        'ReviewsLatencySLOBreach',
        'ReviewsNatsDisconnected',
        'ReviewsNoDataset',
        'ReviewsServiceDown',
        'WebSubDeliveriesFailing',
        'WebSubDenialsSpiking',
        'WebSubQueueBacklog',
        'WebSubSubscriptionsFull',
      ].sort(),
    );
    for (const { expr } of ruleExpressions()) expect(metricNames(expr).length).toBeGreaterThan(0);
  });
});
