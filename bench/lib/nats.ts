import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startProcess, waitForHttp } from './processes.ts';

const NATS_SERVER = process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server';

export interface BenchNats {
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
  /** Stop the server and delete its JetStream directory. */
  stop(): Promise<void>;
}

/**
 * A private JetStream nats-server for one suite: loopback, free ports, its own store dir. Started
 * through startProcess so an interrupted run kills it with the other children.
 */
export async function startBenchNats(): Promise<BenchNats> {
  const storeDir = mkdtempSync(join(tmpdir(), 'bench-nats-'));
  const port = await freePort();
  const monitorPort = await freePort();
  const server = startProcess(['-js', '-sd', storeDir, '-l', join(storeDir, 'nats.log'), '-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort)], {}, port, { command: NATS_SERVER });
  const stop = async () => {
    await server.stop();
    rmSync(storeDir, { recursive: true, force: true });
  };
  try {
    await waitForHttp(`http://127.0.0.1:${monitorPort}/healthz`, 10_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `nats://127.0.0.1:${port}`, stop };
}
