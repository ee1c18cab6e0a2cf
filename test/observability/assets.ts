import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

export const repoRoot = new URL('../../', import.meta.url).pathname;
export const grafanaDir = join(repoRoot, 'deploy/grafana');
export const prometheusDir = join(repoRoot, 'deploy/prometheus');

export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  /** Grafana's minimum interval (step) for the panel's queries. */
  interval?: string;
  targets?: { expr: string; datasource?: { uid: string } }[];
}
export interface Dashboard {
  id: null;
  uid: string;
  title: string;
  schemaVersion: number;
  panels: DashboardPanel[];
  templating: { list: { name: string; type: string; query: unknown }[] };
}

export function loadDashboards(): { file: string; dashboard: Dashboard }[] {
  return readdirSync(grafanaDir)
    .filter((f) => f.endsWith('.json'))
    .map((file) => ({ file, dashboard: JSON.parse(readFileSync(join(grafanaDir, file), 'utf8')) as Dashboard }));
}

export function dashboardExpressions(): { file: string; title: string; expr: string }[] {
  return loadDashboards().flatMap(({ file, dashboard }) =>
    dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((t) => ({ file, title: panel.title, expr: t.expr }))),
  );
}

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Alerting rules of deploy/prometheus/public-reviews.rules.yaml, parsed. */
export function alertRules(): AlertRule[] {
  const file = parse(readFileSync(join(prometheusDir, 'public-reviews.rules.yaml'), 'utf8')) as { groups: { rules: AlertRule[] }[] };
  return file.groups.flatMap((g) => g.rules).filter((r) => r.alert !== undefined);
}

/** Rule expressions, whitespace collapsed to single spaces. */
export function ruleExpressions(): { alert: string; expr: string }[] {
  return alertRules().map(({ alert, expr }) => ({ alert, expr: expr.trim().replace(/\s+/g, ' ') }));
}

const PROMQL_WORDS = new Set(['sum', 'by', 'rate', 'increase', 'max', 'min', 'count', 'scalar', 'time', 'histogram_quantile', 'on', 'le', 'without', 'avg', 'group_left', 'group_right', 'ignoring', 'bool', 'and', 'or', 'unless', 'offset', 'Inf']);

/** Metric names referenced by an expression (identifiers followed by a selector, range or operator). */
export function metricNames(expr: string): string[] {
  const withoutStrings = expr
    .replace(/"[^"]*"/g, '""')
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/\[[^\]]*\]/g, '[]')
    .replace(/\boffset\s+-?[$\w]+/g, '');
  const names = new Set<string>();
  for (const match of withoutStrings.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const word = match[0];
    const next = withoutStrings.slice((match.index ?? 0) + word.length).trimStart()[0];
    if (PROMQL_WORDS.has(word) || next === '(') continue;
    const before = withoutStrings.slice(0, match.index).trimEnd();
    if (before.endsWith('by (') || before.endsWith('by(') || /(by|without|on|ignoring) \([^)]*$/.test(before)) continue;
    names.add(word);
  }
  return [...names];
}

/** Histogram/summary series map back to the metric family the code registers. */
export function familyName(series: string): string {
  return series.replace(/_(bucket|count|sum)$/, '');
}
