/**
 * `npm run bench [-- suite...]`: runs the benchmark suites and writes docs/benchmarks.md, printing the
 * change of every headline figure against the previous report.
 */
import { join } from 'node:path';
import { deltas, machineDescription, readPrevious, writeReport, type Section } from './lib/report.ts';
import { repoRoot } from './lib/processes.ts';
import { staticRepresentations } from './suites/static.ts';
import { search } from './suites/search.ts';
import { swap } from './suites/swap.ts';
import { propagation } from './suites/propagation.ts';
import { mcpThroughput } from './suites/mcp.ts';
import { fanout } from './suites/fanout.ts';
import { overhead } from './suites/overhead.ts';

const SUITES: Record<string, () => Promise<Section>> = {
  static: staticRepresentations,
  search,
  swap,
  propagation,
  mcp: mcpThroughput,
  fanout,
  overhead,
};

const requested = process.argv.slice(2);
const unknown = requested.filter((name) => !(name in SUITES));
if (unknown.length) {
  console.error(`unknown suite(s): ${unknown.join(', ')}; available: ${Object.keys(SUITES).join(', ')}`);
  process.exit(2);
}
// Described once, before any suite starts its servers: it also fails at once when wrk is missing.
let machine: string;
try {
  machine = machineDescription();
} catch (error) {
  console.error((error as Error).message);
  process.exit(2);
}
const report = join(repoRoot, 'docs/benchmarks.md');
const previous = readPrevious(report);
const sections: Section[] = [];
for (const name of requested.length ? requested : Object.keys(SUITES)) {
  console.log(`bench: ${name} …`);
  const section = await SUITES[name]!();
  section.measuredAt = new Date().toISOString().slice(0, 10);
  section.machine = machine;
  sections.push(section);
  for (const table of section.tables) console.table(table.rows.map((r) => Object.fromEntries(table.columns.map((c, i) => [c, r[i]]))));
}
const changes = deltas(previous, sections);
if (changes.length) console.log(`change against the previous report:\n  ${changes.join('\n  ')}`);
writeReport(report, machine, sections, changes);
console.log(`bench: wrote ${report}`);
