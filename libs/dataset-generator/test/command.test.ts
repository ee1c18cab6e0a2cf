import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateDataset } from '@reviews/domain';
import { formatJson, generateDataset } from '@reviews/dataset-generator';
import { callerDirectory } from '@reviews/runtime';
import { runGenerateCommand } from '../src/command.js';

async function run(argv: string[], directory = process.cwd()): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runGenerateCommand(argv, { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) }, directory });
  return { code, stdout, stderr };
}

describe('dataset:generate command', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dataset-generator-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes a valid dataset, creating the directory, and the same bytes on every run', async () => {
    const out = join(dir, 'nested', 'dataset.json');
    const first = await run(['--reviews', '120', '--seed', '9', '--out', out]);
    expect(first).toEqual({ code: 0, stdout: `wrote 120 reviews (seed 9) to ${out}\n`, stderr: '' });
    const bytes = await readFile(out, 'utf8');
    expect(validateDataset(JSON.parse(bytes)).ok).toBe(true);
    expect((await run(['--reviews=120', '--seed=9', `--out=${out}`])).code).toBe(0);
    expect(await readFile(out, 'utf8')).toBe(bytes);
  });

  // A publisher's audit: `cd data && npm run dataset:generate -- --out mine.json` wrote the repository root's mine.json.
  it('writes a relative --out where the command was typed (npm names it INIT_CWD)', async () => {
    const result = await run(['--reviews', '2', '--seed', '1', '--out', 'mine.json'], callerDirectory({ npm_lifecycle_event: 'dataset:generate', INIT_CWD: dir }, 'dataset:generate'));
    expect(result).toEqual({ code: 0, stdout: 'wrote 2 reviews (seed 1) to mine.json\n', stderr: '' });
    expect(existsSync(join(dir, 'mine.json'))).toBe(true);
  });

  it.each([
    [['--seed', '1', '--out', 'x.json'], 'missing --reviews'],
    [['--reviews', 'ten', '--seed', '1', '--out', 'x.json'], '--reviews must be a non-negative integer, got "ten"'],
    [['--reviews=-5', '--seed', '1', '--out', 'x.json'], '--reviews must be a non-negative integer, got "-5"'],
    [['--reviews', '5', '--seed', '4294967296', '--out', 'x.json'], '--seed: Too big'],
    [['--reviews', '200001', '--seed', '1', '--out', 'x.json'], '--reviews: Too big: expected number to be <=200000'],
    [['--reviews', '5', '--seed', '1', '--out', 'x.json', '--now', '2026-13-01'], '--now: must be a real calendar date'],
    [['--reviews', '5', '--seed', '1', '--out', 'x.json', '--colour', 'red'], "Unknown option '--colour'"],
  ])('rejects %j with a precise message, exit code 2 and no file', async (argv, message) => {
    const result = await run(argv.map((arg) => (arg === 'x.json' ? join(dir, 'rejected.json') : arg)));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stderr).toContain('Usage: npm run dataset:generate');
    expect(existsSync(join(dir, 'rejected.json'))).toBe(false);
  });

  it('reports an unwritable destination with exit code 1', async () => {
    const result = await run(['--reviews', '3', '--seed', '1', '--out', dir]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`cannot write ${dir}`);
  });

  it('reproduces the committed sample (400 reviews, seed 42) byte for byte', async () => {
    const committed = await readFile(new URL('../../../data/sample-dataset.json', import.meta.url), 'utf8');
    expect(committed).toBe(`${[...formatJson(generateDataset({ reviews: 400, seed: 42 }))].join('')}\n`);
  });
});
