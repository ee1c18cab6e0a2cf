import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { execFileSync } from 'node:child_process';
import { wrkVersion } from './wrk.ts';

export interface Table {
  readonly columns: string[];
  readonly rows: (string | number)[][];
}

/** One benchmark's outcome: prose, the commands that reproduce it, a table and headline figures. */
export interface Section {
  readonly id: string;
  readonly title: string;
  readonly intro: string;
  readonly commands: string[];
  readonly tables: Table[];
  /** Headline numbers compared with the previous run to make regressions visible. */
  readonly figures: Record<string, number>;
  readonly targets?: string[];
  measuredAt?: string;
  /** The machine this section was measured on: sessions get different hardware (machineDescription). */
  machine?: string;
}

interface Stored {
  /** The machine of the last run; sections written before they named their own have only this. */
  machine: string;
  sections: Section[];
}

const MARKER = '<!-- bench-data ';

export function machineDescription(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const kernel = execFileSync('uname', ['-sr'], { encoding: 'utf8' }).trim();
  return `${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ${kernel}, Node ${process.version}, ${wrkVersion()}`;
}

export function readPrevious(file: string): Stored | null {
  if (!existsSync(file)) return null;
  const text = readFileSync(file, 'utf8');
  const start = text.lastIndexOf(MARKER);
  if (start < 0) return null;
  const end = text.indexOf(' -->', start);
  return JSON.parse(text.slice(start + MARKER.length, end)) as Stored;
}

export function fmt(n: number, digits = 0): string {
  return Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '—';
}

export function ratio(a: number, b: number): string {
  return b > 0 ? `${((a / b) * 100).toFixed(0)}%` : '—';
}

function renderTable(table: Table): string {
  const head = `| ${table.columns.join(' | ')} |`;
  const rule = `|${table.columns.map(() => '---').join('|')}|`;
  return [head, rule, ...table.rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export function deltas(previous: Stored | null, current: Section[]): string[] {
  if (!previous) return [];
  const lines: string[] = [];
  for (const section of current) {
    const before = previous.sections.find((s) => s.id === section.id);
    if (!before) continue;
    for (const [key, value] of Object.entries(section.figures)) {
      const old = before.figures[key];
      if (old === undefined || old === 0) continue;
      const change = ((value - old) / old) * 100;
      const otherMachine = (before.machine ?? previous.machine) !== section.machine ? ', previous run on another machine' : '';
      lines.push(`${section.id}.${key}: ${fmt(old, 2)} → ${fmt(value, 2)} (${change >= 0 ? '+' : ''}${change.toFixed(1)}%${otherMachine})`);
    }
  }
  return lines;
}

/** Merge freshly measured sections into the stored ones and write the Markdown report. */
export function writeReport(file: string, machine: string, fresh: Section[], changeLines: string[]): void {
  const previous = readPrevious(file);
  const kept = (previous?.sections ?? []).filter((s) => !fresh.some((f) => f.id === s.id));
  const sections = [...kept, ...fresh].sort((a, b) => a.id.localeCompare(b.id));
  const stored: Stored = { machine, sections };
  const body = [
    '# Benchmarks',
    '',
    'Written by `npm run bench` (never part of `npm test`). Every HTTP figure is measured side by side in one',
    'run against the limit — a bare `node:http` server writing the same precomputed bytes — and, where',
    'available, an anchor: Debian\'s nginx serving the same files with `gzip_static`. The server under test',
    'runs as one process (one core); the load generator (`wrk -t1`) gets the other core.',
    '',
    'Each section names the machine it was measured on: figures from different machines do not compare.',
    '',
    'Run one suite with `npm run bench -- <suite id>`; the other sections keep their previous figures.',
    '',
    ...sections.flatMap((s) => [
      `## ${s.title}`,
      '',
      `Suite \`${s.id}\`, measured ${s.measuredAt ?? 'earlier'} on ${s.machine ?? 'a machine not recorded'}.`,
      '',
      s.intro,
      '',
      ...(s.targets?.length ? ['Targets:', '', ...s.targets.map((t) => `- ${t}`), ''] : []),
      'Commands:',
      '',
      '```',
      ...s.commands,
      '```',
      '',
      ...s.tables.flatMap((t) => [renderTable(t), '']),
    ]),
    ...(changeLines.length ? ['## Change against the previous run', '', '```', ...changeLines, '```', ''] : []),
    `${MARKER}${JSON.stringify(stored)} -->`,
    '',
  ].join('\n');
  writeFileSync(file, body);
}
