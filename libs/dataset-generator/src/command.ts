/**
 * npm run dataset:generate -- --reviews N --seed S --out FILE [--now YYYY-MM-DD]
 * Writes a deterministic synthetic funeral-home dataset (a DatasetInput) to FILE.
 */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { DEFAULT_NOW, generateDataset, GenerateOptions } from './generate.js';
import { formatJson } from './format-json.js';

const USAGE = `Usage: npm run dataset:generate -- --reviews N --seed S --out FILE [--now YYYY-MM-DD]
  --reviews N   number of reviews (integer, 0 or more)
  --seed S      PRNG seed (integer 0..4294967295); the same seed gives byte-identical output
  --out FILE    where to write the dataset JSON
  --now DATE    publication day; reviews span the five years before it (default ${DEFAULT_NOW})`;

const CHUNK_CHARS = 1 << 16;

class UsageError extends Error {}

function parseFlags(argv: string[]): { options: GenerateOptions; out: string } | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: { reviews: { type: 'string' }, seed: { type: 'string' }, out: { type: 'string' }, now: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values } = parsed;
  if (values.help === true) return 'help';
  const missing = (['reviews', 'seed', 'out'] as const).filter((flag) => values[flag] === undefined);
  if (missing.length > 0) throw new UsageError(`missing ${missing.map((flag) => `--${flag}`).join(', ')}`);
  const integer = (flag: 'reviews' | 'seed'): number => {
    const raw = values[flag] ?? '';
    if (!/^\d+$/.test(raw)) throw new UsageError(`--${flag} must be a non-negative integer, got ${JSON.stringify(raw)}`);
    return Number(raw);
  };
  const candidate = { reviews: integer('reviews'), seed: integer('seed'), ...(values.now === undefined ? {} : { now: values.now }) };
  const checked = GenerateOptions.safeParse(candidate);
  if (!checked.success) throw new UsageError(checked.error.issues.map((issue) => `--${issue.path.join('.')}: ${issue.message}`).join('\n'));
  return { options: candidate, out: values.out ?? '' };
}

/** Batches small chunks so the file is written in a few large writes. */
function* batched(chunks: Iterable<string>): Generator<string> {
  let buffer = '';
  for (const chunk of chunks) {
    buffer += chunk;
    if (buffer.length >= CHUNK_CHARS) {
      yield buffer;
      buffer = '';
    }
  }
  yield `${buffer}\n`;
}

export interface CommandContext {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** Where a relative --out is (callerDirectory). */
  directory: string;
}

/** The whole `dataset:generate` command; resolves to the process exit code (0 ok, 1 write failure, 2 bad flags). */
export async function runGenerateCommand(argv: string[], context: CommandContext): Promise<number> {
  let flags;
  try {
    flags = parseFlags(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    context.stderr.write(`dataset:generate: ${error.message}\n\n${USAGE}\n`);
    return 2;
  }
  if (flags === 'help') {
    context.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const dataset = generateDataset(flags.options);
  const out = resolve(context.directory, flags.out);
  try {
    await mkdir(dirname(out), { recursive: true });
    await pipeline(Readable.from(batched(formatJson(dataset))), createWriteStream(out));
  } catch (error) {
    context.stderr.write(`dataset:generate: cannot write ${flags.out}: ${(error as Error).message}\n`);
    return 1;
  }
  context.stdout.write(`wrote ${dataset.reviews.length} reviews (seed ${flags.options.seed}) to ${flags.out}\n`);
  return 0;
}

