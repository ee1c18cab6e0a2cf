import { describe, expect, it } from '@jest/globals';
import { buildSnapshotFromInput, RENDERING_CHANGED_AT } from '@reviews/domain';
import { buildDataset } from './fixtures.js';

/**
 * What this code renders for one fixed dataset (identity ETags), under the RENDERING_CHANGED_AT it was
 * recorded with. When this fails, the rendered bytes changed: set RENDERING_CHANGED_AT
 * (libs/domain/src/render/rendering-changed-at.ts) to the time of the change and record the new ETags
 * under it, so that once deployed no document keeps a date from before the change and If-Modified-Since
 * cannot answer 304 to a client holding the old bytes.
 */
const RENDERED: Record<string, Record<string, string>> = {
  '2026-11-27T21:50:00.000Z': {
    reviews: '"3yw--Bnb1Dv3mpN0FB5Rk00L1wDcjgbc"',
    insights: '"94xGlRvdoGgBxxMGMGJ-e6auHuAS83IY"',
    feedJson: '"m0sXh7gkFdwLt8kOsBwgRWfCv0iM-9k3"',
    feedAtom: '"JMIP4FUGOW-1lzucDUuywsEX7SYNrub5"',
    openapi: '"zaQlcc38m6qAzBOS83W6SSccueGADLf9"',
  },
};

describe('RENDERING_CHANGED_AT', () => {
  it('moves whenever the bytes rendered from the same dataset change', () => {
    const snapshot = buildSnapshotFromInput(buildDataset({ reviews: 40, seed: 3 }), { baseUrl: 'https://reviews.example.com', publishedAt: new Date('2026-01-01T00:00:00Z') });
    const etags = Object.fromEntries(Object.entries(snapshot.representations).map(([name, representation]) => [name, representation.identity.etag]));
    expect({ [RENDERING_CHANGED_AT.toISOString()]: etags }).toEqual(RENDERED);
  });
});
