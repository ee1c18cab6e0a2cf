import { loadavg } from 'node:os';

/** Other work on the machine skews every figure here; each section says how busy it was when it started. */
export function loadNote(): string {
  return `1-minute load average when the suite started: ${loadavg()[0]!.toFixed(1)}.`;
}
