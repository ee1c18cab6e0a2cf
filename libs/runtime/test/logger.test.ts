import { describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { createLogger } from '../src/logger.js';

function capture(): { lines: Record<string, unknown>[]; write: (line: string) => void } {
  const lines: Record<string, unknown>[] = [];
  return { lines, write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) };
}

describe('createLogger', () => {
  it('stamps every line with the ISO 8601 time it was written, as pino.stdTimeFunctions.isoTime does', async () => {
    const out = capture();
    const logger = createLogger('read-api', 'info', out);
    const before = Date.now();
    logger.info('first');
    logger.info('second');
    // A later millisecond gets its own time, not the first line's: wait (bounded) for the clock to move on.
    const first = Date.parse(out.lines[0]!.time as string);
    const deadline = Date.now() + 1_000;
    while (Date.now() <= first + 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
    logger.info('third');
    const after = Date.now();
    const times = out.lines.map((line) => line.time as string);
    // The same text as pino's own ISO time field, digits aside.
    const isoShape = (JSON.parse(`{${pino.stdTimeFunctions.isoTime().slice(1)}}`) as { time: string }).time.replace(/\d/g, '0');
    for (const time of times) expect(time.replace(/\d/g, '0')).toBe(isoShape);
    const millis = times.map((time) => Date.parse(time));
    expect(millis.every((m) => m >= before && m <= after)).toBe(true);
    expect(millis[2]! - millis[0]!).toBeGreaterThanOrEqual(2);
    expect(out.lines.map((line) => [line.msg, line.service])).toEqual([['first', 'read-api'], ['second', 'read-api'], ['third', 'read-api']]);
  });
});
