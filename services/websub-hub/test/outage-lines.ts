import { expect } from '@jest/globals';
import type { LogLine } from './support.js';

export const WARN = 40;
export const INFO = 30;

/**
 * One outage of `activity` as the outage log tells it: a single warning without a stack trace, every
 * further failure below info, then one recovery line counting every failed attempt, after the warning.
 */
export function expectOneOutageLogged(lines: readonly LogLine[], activity: string): void {
  const activityLines = lines.filter((l) => l.msg.startsWith(activity));
  const warnings = activityLines.filter((l) => l.level >= WARN);
  expect(warnings.map((l) => l.msg)).toEqual([`${activity} failed; retrying`]);
  const [warning] = warnings;
  // An outage error says what failed (the server's 409 "server shutdown", "heartbeats missed"), without a stack trace.
  expect(warning?.error).toEqual(expect.objectContaining({ type: expect.any(String), message: expect.any(String) }));
  expect(JSON.stringify(warning)).not.toContain('stack');

  const recoveries = activityLines.filter((l) => l.level === INFO);
  expect(recoveries).toHaveLength(1);
  expect(recoveries[0]).toMatchObject({ msg: `${activity} works again`, attempts: expect.any(Number), failedForMs: expect.any(Number) });
  // Every failed attempt of the outage is counted, and the recovery comes after the warning.
  expect(recoveries[0]?.attempts).toBe(activityLines.filter((l) => l.level < INFO).length + 1);
  expect(lines.indexOf(recoveries[0] as LogLine)).toBeGreaterThan(lines.indexOf(warning as LogLine));
}
