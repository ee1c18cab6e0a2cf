import type { ChildProcess } from 'node:child_process';

/** How long a process may take to exit on SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 5_000;

/** SIGTERM, then SIGKILL if it has not exited in time; resolves once it has exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
