import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killChild, stopChild } from './child-process.js';
import { eventually } from './eventually.js';

/** The Debian build the design targets (2.9.10); override for a locally installed server. */
const NATS_SERVER_BIN = process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server';
const READY_TIMEOUT_MS = 10_000;
const POLL_INTERVAL_MS = 50;
/** Fresh ports to try when the ones picked were taken before nats-server bound them. */
const START_ATTEMPTS = 3;

/**
 * A private JetStream-enabled nats-server for one test file: loopback only, free ports, its own
 * temporary store dir. `restart()` brings it back on the SAME port and store dir, so clients
 * reconnect and persisted streams (KV, Object Store) survive, which is what fault tests need.
 */
export interface NatsServerHandle {
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  readonly running: boolean;
  stop(): Promise<void>;
  /** Start again after `stop()`, same port and store dir; resolves once /healthz answers ok. */
  start(): Promise<void>;
  restart(): Promise<void>;
  /** SIGKILL: the server dies without a word to its clients (a crash, an OOM kill); `start()` brings it back. */
  crash(): Promise<void>;
  /** SIGSTOP: the server keeps its port and accepts TCP connections, but answers nothing (a hung server). Resolves once it has stopped. */
  freeze(): Promise<void>;
  /** SIGCONT after freeze(). */
  thaw(): void;
  /** Stop (if running) and delete the store dir. Call it in afterAll. */
  dispose(): Promise<void>;
}

/**
 * `args` go to nats-server after the test's own (e.g. `-c <file>` for accounts, `--user`/`--pass`).
 * A port is picked free and bound by nats-server a moment later, when another test's connection may
 * have taken it: the first start then tries fresh ports.
 */
export async function startNatsServer(args: readonly string[] = []): Promise<NatsServerHandle> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreePorts(args);
    } catch (error) {
      if (attempt >= START_ATTEMPTS || !/address already in use/.test((error as Error).message)) throw error;
    }
  }
}

async function startOnFreePorts(args: readonly string[]): Promise<NatsServerHandle> {
  const storeDir = await mkdtemp(join(tmpdir(), 'nats-test-'));
  const port = await freePort();
  const monitorPort = await freePort();
  let child: ChildProcess | null = null;

  const start = async (): Promise<void> => {
    if (child) return;
    const proc = spawn(NATS_SERVER_BIN, ['-js', '-sd', storeDir, '-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    proc.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-4000);
    });
    child = proc;
    try {
      await waitUntilHealthy(monitorPort, proc);
    } catch (error) {
      await stop();
      throw new Error(`nats-server did not become healthy on port ${port}: ${(error as Error).message}\n${stderr}`);
    }
  };

  const stop = async (): Promise<void> => {
    const proc = child;
    if (!proc) return;
    child = null;
    // A frozen server would never act on the stop signal.
    proc.kill('SIGCONT');
    await stopChild(proc);
  };

  try {
    await start();
  } catch (error) {
    await rm(storeDir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    get running() {
      return child !== null;
    },
    start,
    stop,
    restart: async () => {
      await stop();
      await start();
    },
    crash: async () => {
      const proc = child;
      if (!proc) return;
      child = null;
      await killChild(proc);
    },
    freeze: async () => {
      const proc = child;
      if (!proc?.pid) return;
      proc.kill('SIGSTOP');
      // The signal takes effect a moment later: a request sent at once may still be answered.
      const state = () => readFile(`/proc/${proc.pid}/stat`, 'latin1').then((stat) => stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
      await eventually(async () => (await state()) === 'T', { timeoutMs: READY_TIMEOUT_MS, intervalMs: 5 });
    },
    thaw: () => void child?.kill('SIGCONT'),
    dispose: async () => {
      await stop();
      await rm(storeDir, { recursive: true, force: true });
    },
  };
}

/** Ask the OS for a free loopback port (a tiny race with other processes is accepted in tests). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port assigned'))));
    });
  });
}

async function waitUntilHealthy(monitorPort: number, proc: ChildProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = 'not polled yet';
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`exited with code ${proc.exitCode}`);
    try {
      const response = await fetch(`http://127.0.0.1:${monitorPort}/healthz`, { signal: AbortSignal.timeout(1_000) });
      if (response.ok) return;
      last = `healthz answered ${response.status}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
  throw new Error(`timed out after ${READY_TIMEOUT_MS} ms (${last})`);
}
