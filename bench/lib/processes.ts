import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';

export const repoRoot = new URL('../../', import.meta.url).pathname;
/** The project's own Node 24, the same runtime the services use in production. */
export const nodeBinary = process.execPath;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface Running {
  readonly child: ChildProcess;
  readonly port: number;
  stop(): Promise<void>;
}

/** Poll until `url` answers with one of `okStatuses`, or fail after `timeoutMs`. */
export async function waitForHttp(url: string, timeoutMs = 60_000, okStatuses = [200]): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (okStatuses.includes(res.status)) return;
      last = `status ${res.status}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await delay(100);
  }
  throw new Error(`${url} not ready after ${timeoutMs} ms (${last})`);
}

/** Every child still running; killed if the benchmark itself is interrupted or fails. */
const children = new Set<ChildProcess>();
const killAll = () => {
  for (const child of children) child.kill('SIGKILL');
};
process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAll();
    process.exit(130);
  });
}

export function startProcess(args: string[], env: Record<string, string>, port: number, options: { cwd?: string; command?: string } = {}): Running {
  const child = spawn(options.command ?? nodeBinary, args, {
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return {
    child,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        child.once('exit', () => {
          clearTimeout(killer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

/** Resident set size of a process in bytes, from /proc. */
export function rssBytes(pid: number): Promise<number> {
  return import('node:fs/promises').then(async ({ readFile }) => {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    return kb ? Number(kb) * 1024 : 0;
  });
}
