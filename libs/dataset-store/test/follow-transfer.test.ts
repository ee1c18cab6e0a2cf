import { describe, it, expect } from '@jest/globals';
import { buildSnapshotContent } from '@reviews/domain';
import { packOutcome, REVIEWS_PER_SLICE, unpackOutcome } from '../src/follow-transfer.js';
import { buildDataset } from '../../domain/test/fixtures.js';

const options = { baseUrl: 'https://reviews.example.com', publishedAt: new Date('2026-01-01T00:00:00Z') };

describe('a built snapshot sent from the build worker', () => {
  it('arrives whole after one message, its reviews and analyses deserialized one slice per task', async () => {
    const input = buildDataset({ reviews: REVIEWS_PER_SLICE + 7, seed: 5 });
    const { message, transfer } = packOutcome({ ok: true, content: buildSnapshotContent(input, options) });
    // What postMessage does: a structured clone, every listed buffer moved.
    const received = structuredClone(message, { transfer });
    let slicesBetweenYields = 0;
    const outcome = await unpackOutcome(received, async () => slicesBetweenYields++);

    if (!outcome.ok) throw new Error(outcome.rejection.summary);
    const { content } = outcome;
    expect(content).toEqual(buildSnapshotContent(input, options));
    expect(slicesBetweenYields).toBe(2 + Math.ceil(Object.keys(input.analysis.per_review).length / REVIEWS_PER_SLICE));
    for (const representation of Object.values(content.representations)) expect(Buffer.isBuffer(representation.identity.body)).toBe(true);
    // One object per review and one analysis map, shared by the documents as on the worker.
    const inputReviews = new Set(content.input.reviews);
    expect(content.reviewsDocument.reviews.every((review) => inputReviews.has(review))).toBe(true);
    expect(content.insightsDocument.per_review).toBe(content.input.analysis.per_review);
  });

  it('passes a refusal through as it is', async () => {
    const refusal = { ok: false as const, rejection: { reason: 'invalid_json' as const, summary: 'not valid JSON', issues: [] } };
    const { message, transfer } = packOutcome(refusal);
    expect(transfer).toEqual([]);
    expect(await unpackOutcome(structuredClone(message), async () => undefined)).toEqual(refusal);
  });
});
