import type { ChildProcess } from 'node:child_process';

/** How long a process may take to exit on SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 5_000;

/** SIGTERM, then SIGKILL if it has not exited in time; resolves once it has exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  const exited = exitOf(child);
  if (exited === null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

/** SIGKILL: the process dies at once, as in a crash; resolves once it has exited. */
export async function killChild(child: ChildProcess): Promise<void> {
  const exited = exitOf(child);
  if (exited === null) return;
  child.kill('SIGKILL');
  await exited;
}

/** Resolves once `child` exits; null when it already has, as its 'exit' event will not come again. */
function exitOf(child: ChildProcess): Promise<void> | null {
  if (child.exitCode !== null || child.signalCode !== null) return null;
  return new Promise<void>((resolve) => child.once('exit', () => resolve()));
}
