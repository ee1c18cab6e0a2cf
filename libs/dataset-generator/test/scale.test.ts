import { describe, it, expect } from '@jest/globals';
import { formatJson, generateDataset } from '@reviews/dataset-generator';

describe('generateDataset at scale', () => {
  it('generates and serializes 20,000 reviews without quadratic steps (generous bound for a loaded CI machine)', () => {
    const started = performance.now();
    const dataset = generateDataset({ reviews: 20_000, seed: 2026 });
    let characters = 0;
    for (const chunk of formatJson(dataset)) characters += chunk.length;
    expect(dataset.reviews).toHaveLength(20_000);
    expect(new Set(dataset.reviews.map((review) => review.id)).size).toBe(20_000);
    expect(characters).toBeGreaterThan(10_000_000);
    expect(performance.now() - started).toBeLessThan(15_000);
  });
});
