import { expect } from '@jest/globals';
import { pino } from 'pino';
import type { Logger } from '@reviews/runtime';

/** The fields of a hub log line the outage tests read. */
export interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly err?: unknown;
  readonly error?: { readonly type: string; readonly message: string; readonly code?: unknown };
  readonly attempts?: number;
  readonly failedForMs?: number;
}

export const WARN = 40;
export const INFO = 30;

/** A debug-level logger whose every line lands, parsed, in `lines`. */
export function capturingLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  return { logger: pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) }), lines };
}

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
