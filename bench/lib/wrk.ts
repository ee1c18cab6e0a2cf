import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * wrk's version line, for the report's machine description. Every suite loads its servers with wrk,
 * which the machines do not ship: without it, a suite would fail minutes in on a bare "command not
 * found", so the runner describes the machine before any suite starts.
 */
export function wrkVersion(): string {
  // wrk prints its version to stdout and exits 1.
  const { error, stdout } = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (error) throw new Error(`npm run bench needs wrk on the PATH (Debian: apt-get install wrk): ${error.message}`);
  return stdout.split('\n')[0]?.trim() || 'wrk';
}

export interface LoadSettings {
  readonly connections: number;
  readonly durationSeconds: number;
  readonly headers?: Record<string, string>;
  /** A wrk Lua script (file path), e.g. one setting the method and body of a POST. */
  readonly script?: string;
  /** Run wrk on this CPU only (taskset), away from a server pinned to another. */
  readonly cpu?: number;
}

export interface LoadResult {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx3xx: number;
  readonly errors: number;
}

// BENCH_SECONDS shortens runs for smoke checks; recorded figures use the default.
export const DEFAULT_LOAD: LoadSettings = { connections: 50, durationSeconds: Number(process.env.BENCH_SECONDS ?? 10) };

function toMs(value: string, unit: string): number {
  const n = Number(value);
  return unit === 'us' ? n / 1000 : unit === 's' ? n * 1000 : unit === 'm' ? n * 60_000 : n;
}

/**
 * wrk with one thread: the server under test gets one core, the load generator the other.
 * `--latency` prints the percentile table we read p50/p99 from.
 */
export async function loadTest(url: string, settings: LoadSettings = DEFAULT_LOAD): Promise<LoadResult> {
  const headerArgs = Object.entries(settings.headers ?? {}).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
  const scriptArgs = settings.script ? ['-s', settings.script] : [];
  const wrkArgs = ['-t1', `-c${settings.connections}`, `-d${settings.durationSeconds}s`, '--latency', ...scriptArgs, ...headerArgs, url];
  const [command, args] = settings.cpu === undefined ? ['wrk', wrkArgs] : ['taskset', ['-c', String(settings.cpu), 'wrk', ...wrkArgs]];
  const { stdout } = await run(command, args, { maxBuffer: 1 << 20 });
  const percentile = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(stdout);
    if (!m) throw new Error(`wrk output lacks the ${p}% latency line:\n${stdout}`);
    return toMs(m[1]!, m[2]!);
  };
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(stdout);
  if (!rps) throw new Error(`unexpected wrk output:\n${stdout}`);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
  return {
    requestsPerSecond: Number(rps[1]),
    p50Ms: percentile('50'),
    p99Ms: percentile('99'),
    non2xx3xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0),
    errors: socketErrors ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
  };
}
