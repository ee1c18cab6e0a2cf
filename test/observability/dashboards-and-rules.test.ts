import { describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dashboardExpressions, loadDashboards, metricNames, prometheusDir, ruleExpressions } from './assets.js';

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
    for (const { expr } of dashboardExpressions()) {
      for (const window of expr.matchAll(/(?:rate|increase)\([^[]*\[([^\]]+)\]/g)) expect(window[1]).toBe('$__rate_interval');
    }
  });

  itWithPromtool('contain only valid PromQL (checked by promtool)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dashboards-'));
    try {
      const rules = dashboardExpressions().map(({ expr }, i) => {
        const concrete = expr.replaceAll('$__rate_interval', '5m').replace(/\$[a-z]+/g, '.*');
        return `      - record: dashboard:expr_${i}\n        expr: ${JSON.stringify(concrete)}`;
      });
      const file = join(dir, 'dashboards.rules.yaml');
      writeFileSync(file, `groups:\n  - name: dashboards\n    rules:\n${rules.join('\n')}\n`);
      execFileSync('promtool', ['check', 'rules', file], { stdio: 'pipe' });
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

  it('cover error ratio, latency, dataset divergence and staleness, NATS, deliveries, denials', () => {
    expect(ruleExpressions().map((r) => r.alert).sort()).toEqual(
      [
        'ReviewsDatasetDiverging',
        'ReviewsDatasetRejected',
        'ReviewsDatasetStale',
        'ReviewsHighErrorRatio',
        'ReviewsLatencySLOBreach',
        'ReviewsNatsDisconnected',
        'WebSubDeliveriesFailing',
        'WebSubDenialsSpiking',
        'WebSubQueueBacklog',
      ].sort(),
    );
    for (const { expr } of ruleExpressions()) expect(metricNames(expr).length).toBeGreaterThan(0);
  });
});
