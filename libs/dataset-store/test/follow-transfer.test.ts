import { describe, it, expect } from '@jest/globals';
import { buildSnapshotContent, validateDataset, type DatasetInput } from '@reviews/domain';
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

  it('arrives with the analyses of the published reviews only, when the dataset holds unverified ones', async () => {
    const dataset = buildDataset({ reviews: REVIEWS_PER_SLICE + 7, seed: 8 });
    const input = { ...dataset, reviews: dataset.reviews.map((review, i) => (i % 10 === 0 ? { ...review, verified: false } : review)) };
    const { message, transfer } = packOutcome({ ok: true, content: buildSnapshotContent(input, options) });
    const outcome = await unpackOutcome(structuredClone(message, { transfer }), async () => undefined);

    if (!outcome.ok) throw new Error(outcome.rejection.summary);
    expect(outcome.content).toEqual(buildSnapshotContent(input, options));
    const published = new Set(outcome.content.reviewsDocument.reviews.map((review) => review.id));
    expect(Object.keys(outcome.content.insightsDocument.per_review).every((id) => published.has(id))).toBe(true);
    expect(Object.keys(outcome.content.input.analysis.per_review).some((id) => !published.has(id))).toBe(true);
  });

  it('sends only the slices that differ from the version the serving thread holds, which lends the rest its objects', async () => {
    const dataset = buildDataset({ reviews: 3 * REVIEWS_PER_SLICE + 7, seed: 6 });
    const changed = structuredClone(dataset);
    changed.reviews[REVIEWS_PER_SLICE + 3]!.text = `${changed.reviews[REVIEWS_PER_SLICE + 3]!.text ?? ''} (edited)`;
    // As the build worker has them: parsed from the published bytes and validated.
    const [before, edited] = [dataset, changed].map((version) => {
      const validated = validateDataset(JSON.parse(JSON.stringify(version)));
      if (!validated.ok) throw new Error('the fixture is invalid');
      return validated.input;
    }) as [DatasetInput, DatasetInput];
    const first = packOutcome({ ok: true, content: buildSnapshotContent(before, options) });
    const held = await unpackOutcome(structuredClone(first.message, { transfer: first.transfer }), async () => undefined);
    if (!held.ok) throw new Error(held.rejection.summary);

    const second = packOutcome({ ok: true, content: buildSnapshotContent(edited, options) }, first.sent);
    expect(second.message.reviewSlices.map((slice) => slice !== null)).toEqual([false, true, false, false]);
    expect(second.message.analysisSlices.every((slice) => slice === null)).toBe(true);
    let deserialized = 0;
    const outcome = await unpackOutcome(structuredClone(second.message, { transfer: second.transfer }), async () => deserialized++, held.content);

    if (!outcome.ok) throw new Error(outcome.rejection.summary);
    expect(outcome.content).toEqual(buildSnapshotContent(edited, options));
    expect(deserialized).toBe(1);
    const reviews = outcome.content.input.reviews;
    expect(reviews[0]).toBe(held.content.input.reviews[0]);
    expect(reviews[3 * REVIEWS_PER_SLICE]).toBe(held.content.input.reviews[3 * REVIEWS_PER_SLICE]);
    expect(reviews[REVIEWS_PER_SLICE + 3]).not.toBe(held.content.input.reviews[REVIEWS_PER_SLICE + 3]);
    expect(reviews[REVIEWS_PER_SLICE + 3]!.text).toMatch(/\(edited\)$/);
  });

  it('refuses content that reuses a version the serving thread does not hold', async () => {
    const input = buildDataset({ reviews: REVIEWS_PER_SLICE + 7, seed: 7 });
    const first = packOutcome({ ok: true, content: buildSnapshotContent(input, options) });
    const again = packOutcome({ ok: true, content: buildSnapshotContent(input, options) }, first.sent);
    expect(again.message.reusedVersion).toBe(first.sent!.version);
    const outcome = await unpackOutcome(structuredClone(again.message, { transfer: again.transfer }), async () => undefined, null);
    expect(outcome).toMatchObject({ ok: false, rejection: { reason: 'build_error' } });
  });

  it('passes a refusal through as it is', async () => {
    const refusal = { ok: false as const, rejection: { reason: 'invalid_json' as const, summary: 'not valid JSON', issues: [] } };
    const { message, transfer } = packOutcome(refusal);
    expect(transfer).toEqual([]);
    expect(await unpackOutcome(structuredClone(message), async () => undefined)).toEqual(refusal);
  });
});
