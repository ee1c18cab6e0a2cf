import { describe, expect, it } from '@jest/globals';
import { lastModifiedAfter } from '@reviews/domain';

const at = (iso: string) => new Date(iso);
const ms = (iso: string) => Date.parse(iso);

describe('lastModifiedAfter', () => {
  const now = ms('2026-03-01T12:00:27.600Z');

  it('is the publish time in whole seconds for the first version', () => {
    expect(lastModifiedAfter(at('2026-03-01T11:00:00.900Z'), null, now)).toEqual({ at: at('2026-03-01T11:00:00Z'), shared: false });
  });

  it('is never ahead of the clock', () => {
    expect(lastModifiedAfter(at('2030-01-01T00:00:00Z'), null, now)).toEqual({ at: at('2026-03-01T12:00:27Z'), shared: false });
  });

  it('is the publish time when that is after the previous version', () => {
    expect(lastModifiedAfter(at('2026-03-01T12:00:20Z'), ms('2026-03-01T12:00:10Z'), now)).toEqual({ at: at('2026-03-01T12:00:20Z'), shared: false });
  });

  it('is the time of replacing when the publish time is not after the previous version', () => {
    expect(lastModifiedAfter(at('2026-03-01T12:00:10.500Z'), ms('2026-03-01T12:00:10Z'), now)).toEqual({ at: at('2026-03-01T12:00:27Z'), shared: false });
    expect(lastModifiedAfter(at('2025-01-01T00:00:00Z'), ms('2026-03-01T12:00:10Z'), now)).toEqual({ at: at('2026-03-01T12:00:27Z'), shared: false });
  });

  it('shares the previous second when both versions come within it', () => {
    expect(lastModifiedAfter(at('2026-03-01T12:00:27.300Z'), ms('2026-03-01T12:00:27Z'), now)).toEqual({ at: at('2026-03-01T12:00:27Z'), shared: true });
  });

  it('does not go back when the clock did', () => {
    expect(lastModifiedAfter(at('2026-03-01T12:00:20Z'), ms('2026-03-01T12:00:30Z'), now)).toEqual({ at: at('2026-03-01T12:00:30Z'), shared: true });
  });
});
