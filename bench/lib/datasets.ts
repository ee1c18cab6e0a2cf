import { readFileSync } from 'node:fs';
import { validateDataset, type DatasetInput } from '@reviews/domain';
import { dataset } from './context.ts';

/** A generated dataset (cached under tmp/bench), parsed and validated like a publisher would. */
export function datasetInput(reviews: number, seed: number): DatasetInput {
  const parsed = validateDataset(JSON.parse(readFileSync(dataset(reviews, seed), 'utf8')));
  if (!parsed.ok) throw new Error(`generated dataset is invalid: ${JSON.stringify(parsed.issues.slice(0, 3))}`);
  return parsed.input;
}

/**
 * `count` versions of `base` that differ in one owner reply (of the newest replied review, so the
 * feeds change too): a realistic edit that changes the bytes of every WebSub topic.
 */
export function editedVersions(base: DatasetInput, count: number): DatasetInput[] {
  const replied = base.reviews.filter((r) => r.owner_reply !== null).sort((a, b) => b.date.localeCompare(a.date))[0];
  if (!replied) throw new Error('the generated dataset has no review with an owner reply to edit');
  return Array.from({ length: count }, (_, n) => ({
    ...base,
    reviews: base.reviews.map((review) =>
      review === replied && review.owner_reply ? { ...review, owner_reply: { ...review.owner_reply, text: `${review.owner_reply.text} (note ${n + 1})` } } : review,
    ),
  }));
}
