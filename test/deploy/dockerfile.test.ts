// deploy/docker/Dockerfile cannot be built here (no Docker engine), so its contract is checked
// statically: stages, non-root runtime, every COPY source present in the build context after
// .dockerignore, every workspace installed, and the entry points it starts existing in the sources.
import { describe, it, expect } from '@jest/globals';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { npmScripts, repoRoot } from './support/chart.js';

interface Instruction {
  readonly op: string;
  readonly args: string;
}
interface Stage {
  readonly name: string;
  readonly instructions: Instruction[];
}

function parseDockerfile(text: string): Stage[] {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, op = '', args = ''] = /^(\w+)\s+(.*)$/.exec(line) ?? [];
    if (op.toUpperCase() === 'FROM') stages.push({ name: /\bAS\s+(\S+)$/i.exec(args)?.[1] ?? '', instructions: [] });
    stages.at(-1)?.instructions.push({ op: op.toUpperCase(), args });
  }
  return stages;
}

/** .dockerignore semantics: the last matching pattern wins, `!` re-includes, a match on a parent directory covers its contents. */
function dockerignore(text: string): (path: string) => boolean {
  const patterns = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((raw) => {
      const negate = raw.startsWith('!');
      const glob = (negate ? raw.slice(1) : raw).replace(/^\/+|\/+$/g, '');
      const source = glob
        .split(/(\*\*\/?|\*|\?)/)
        .map((part) => (part === '**/' ? '(?:.*/)?' : part === '**' ? '.*' : part === '*' ? '[^/]*' : part === '?' ? '[^/]' : part.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
        .join('');
      return { negate, re: new RegExp(`^${source}$`) };
    });
  return (path) => {
    const prefixes = path.split('/').map((_, i, parts) => parts.slice(0, i + 1).join('/'));
    let ignored = false;
    for (const { negate, re } of patterns) if (prefixes.some((p) => re.test(p))) ignored = !negate;
    return ignored;
  };
}

const dockerfile = readFileSync(join(repoRoot, 'deploy/docker/Dockerfile'), 'utf8');
const stages = parseDockerfile(dockerfile);
const stage = (name: string): Stage => stages.find((s) => s.name === name) ?? { name, instructions: [] };
const ops = (s: Stage, op: string): string[] => s.instructions.filter((i) => i.op === op).map((i) => i.args);
const isIgnored = dockerignore(readFileSync(join(repoRoot, '.dockerignore'), 'utf8'));
const workspaces = ['libs', 'services'].flatMap((group) => readdirSync(join(repoRoot, group)).map((name) => `${group}/${name}`)).filter((ws) => existsSync(join(repoRoot, ws, 'package.json')));

/** Sources of `COPY` from the build context (not --from another stage). */
function contextCopies(s: Stage): string[] {
  return ops(s, 'COPY')
    .filter((args) => !args.includes('--from='))
    .flatMap((args) => args.replace(/--\S+/g, '').trim().split(/\s+/).slice(0, -1));
}

function filesUnder(path: string): string[] {
  const abs = join(repoRoot, path);
  if (!statSync(abs).isDirectory()) return [path];
  return readdirSync(abs).flatMap((entry) => (entry === 'node_modules' || entry === 'dist' ? [] : filesUnder(`${path}/${entry}`)));
}

describe('deploy/docker/Dockerfile', () => {
  it('has the deps, build, dev, prod-deps and runtime stages, runtime last (the default target)', () => {
    expect(stages.map((s) => s.name)).toEqual(['deps', 'build', 'dev', 'prod-deps', 'runtime']);
  });

  it('runs the runtime as a numeric non-root user, exec-form, without HEALTHCHECK, starting the standalone server', () => {
    const runtime = stage('runtime');
    const user = ops(runtime, 'USER').at(-1) ?? '';
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
    expect(dockerfile).not.toMatch(/^\s*HEALTHCHECK/m);
    const cmd = JSON.parse(ops(runtime, 'CMD').at(-1) ?? 'null') as string[];
    expect(JSON.parse(ops(runtime, 'ENTRYPOINT').at(-1) ?? 'null')).toEqual(expect.arrayContaining([expect.stringMatching(/node$/)]));
    // Same arguments as `npm start` (the standalone server, OpenTelemetry hooks preloaded).
    expect(['node', ...cmd].join(' ')).toBe(/node .*$/.exec(npmScripts.start ?? '')?.[0]);
    expect(existsSync(join(repoRoot, 'services/standalone/src/main.ts'))).toBe(true);
  });

  it('installs with npm ci (production dependencies only in the runtime) and builds with tsc -b', () => {
    expect(ops(stage('deps'), 'RUN').join('\n')).toMatch(/npm ci\b/);
    expect(ops(stage('prod-deps'), 'RUN').join('\n')).toMatch(/npm ci --omit=dev\b/);
    expect(ops(stage('build'), 'RUN').join('\n')).toMatch(/tsc -b/);
  });

  it('gives Tilt a dev target that restarts on synced output', () => {
    expect(JSON.parse(ops(stage('dev'), 'ENTRYPOINT').at(-1) ?? '[]')).toEqual(expect.arrayContaining(['node', '--watch']));
    expect(ops(stage('dev'), 'USER').at(-1)).toMatch(/^\d+(:\d+)?$/);
  });

  it.each(['deps', 'prod-deps'])('%s installs every workspace (its package.json is copied first)', (name) => {
    const copied = contextCopies(stage(name));
    expect(copied).toEqual(expect.arrayContaining(['package.json', 'package-lock.json', ...workspaces.map((ws) => `${ws}/package.json`)]));
  });

  it('finds every COPY source in the build context left by .dockerignore', () => {
    for (const source of new Set(stages.flatMap(contextCopies))) {
      expect({ source, exists: existsSync(join(repoRoot, source)), ignored: isIgnored(source) }).toEqual({ source, exists: true, ignored: false });
    }
  });

  it('sends every workspace’s manifest, tsconfig and sources, but no tests or node_modules', () => {
    for (const ws of workspaces) {
      const files = filesUnder(ws);
      const sent = files.filter((f) => !isIgnored(f));
      expect(sent).toEqual(expect.arrayContaining([`${ws}/package.json`, `${ws}/tsconfig.json`, ...files.filter((f) => f.startsWith(`${ws}/src/`))]));
      expect(sent.filter((f) => f.startsWith(`${ws}/test/`))).toEqual([]);
    }
    expect(isIgnored('libs/domain/node_modules/x/index.js')).toBe(true);
    expect(isIgnored('.git/HEAD')).toBe(true);
    expect(isIgnored('data/sample-dataset.json')).toBe(false);
  });

  it('preloads an instrumentation module that exists', () => {
    expect(dockerfile).toContain('"--import", "@reviews/runtime/instrumentation"');
    expect(existsSync(join(repoRoot, 'libs/runtime/src/instrumentation.ts'))).toBe(true);
  });
});
