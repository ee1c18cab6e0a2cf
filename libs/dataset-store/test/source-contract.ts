import { describe, it, expect, afterEach } from '@jest/globals';
import type { DatasetSource, PublishedDataset } from '@reviews/dataset-store';
import { buildDataset } from '../../domain/test/fixtures.js';
import { waitFor } from '../../../test/support/eventually.js';

/** A source under test plus the publisher side that feeds it. */
export interface SourceHarness {
  readonly source: DatasetSource;
  /** Make `bytes` the current dataset, as a publisher would. */
  publish(bytes: Uint8Array): Promise<void>;
  /** Closes the source if still open and releases everything the factory started (servers, temp dirs). */
  cleanup(): Promise<void>;
}

export type SourceFactory = (initial: Uint8Array | null) => Promise<SourceHarness>;

/** Distinct valid datasets (small), as canonical JSON bytes. */
export function datasetBytes(seed: number): Uint8Array {
  return Buffer.from(JSON.stringify(buildDataset({ reviews: 6, seed })), 'utf8');
}

/**
 * What every DatasetSource (file watcher, NATS JetStream) must do, run against each implementation:
 * `describeDatasetSourceContract('nats', factory)`.
 */
export function describeDatasetSourceContract(name: string, factory: SourceFactory): void {
  describe(`DatasetSource contract: ${name}`, () => {
    let harness: SourceHarness | null = null;
    const start = async (initial: Uint8Array | null) => {
      harness = await factory(initial);
      const received: PublishedDataset[] = [];
      await harness.source.subscribe((dataset) => {
        received.push(dataset);
      });
      return { harness, received };
    };
    afterEach(async () => {
      await harness?.cleanup();
      harness = null;
    });

    it('delivers the current dataset before subscribe resolves', async () => {
      const initial = datasetBytes(1);
      const { received } = await start(initial);
      expect(received).toHaveLength(1);
      const [dataset] = received;
      expect(Buffer.from(dataset!.bytes).equals(Buffer.from(initial))).toBe(true);
      expect(typeof dataset!.version).toBe('string');
      expect(dataset!.version.length).toBeGreaterThan(0);
      expect(dataset!.publishedAt).toBeInstanceOf(Date);
      expect(Number.isNaN(dataset!.publishedAt.getTime())).toBe(false);
    });

    it('resolves without a delivery when nothing is published, then delivers the first publish', async () => {
      const { harness: h, received } = await start(null);
      expect(received).toHaveLength(0);
      const first = datasetBytes(2);
      await h.publish(first);
      await waitFor(() => received.length === 1, 10_000, 'the first dataset');
      expect(Buffer.from(received[0]!.bytes).equals(Buffer.from(first))).toBe(true);
    });

    it('delivers every later change once, in order, with distinct versions', async () => {
      const { harness: h, received } = await start(datasetBytes(3));
      for (const seed of [4, 5]) {
        const before = received.length;
        await h.publish(datasetBytes(seed));
        await waitFor(() => received.length === before + 1, 10_000, `dataset ${seed}`);
      }
      expect(received.map((d) => Buffer.from(d.bytes).toString())).toEqual([3, 4, 5].map((seed) => Buffer.from(datasetBytes(seed)).toString()));
      expect(new Set(received.map((d) => d.version)).size).toBe(3);
    });

    it('skips to the newest change when several came while the consumer was busy with one', async () => {
      harness = await factory(datasetBytes(9));
      const received: PublishedDataset[] = [];
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => (release = resolve));
      await harness.source.subscribe(async (dataset) => {
        received.push(dataset);
        // A replica busy building the second dataset (or frozen) while publishes go on.
        if (received.length === 2) await held;
      });
      await harness.publish(datasetBytes(10));
      await waitFor(() => received.length === 2, 10_000, 'dataset 10 being built');
      for (const seed of [11, 12, 13]) await harness.publish(datasetBytes(seed));
      release();
      await waitFor(() => received.length === 3, 10_000, 'the newest dataset after the busy one');
      expect(received.map((d) => Buffer.from(d.bytes).toString())).toEqual([9, 10, 13].map((seed) => Buffer.from(datasetBytes(seed)).toString()));
      // Nothing older follows it.
      await harness.publish(datasetBytes(14));
      await waitFor(() => received.length === 4, 10_000, 'dataset 14');
      expect(Buffer.from(received[3]!.bytes).equals(Buffer.from(datasetBytes(14)))).toBe(true);
    });

    it('does not deliver identical content again', async () => {
      const { harness: h, received } = await start(datasetBytes(6));
      await h.publish(datasetBytes(6));
      await h.publish(datasetBytes(7));
      await waitFor(() => received.some((d) => Buffer.from(d.bytes).equals(Buffer.from(datasetBytes(7)))), 10_000, 'dataset 7');
      expect(received).toHaveLength(2);
    });

    it('reports its health and closes cleanly', async () => {
      const { harness: h } = await start(datasetBytes(8));
      const health = h.source.health();
      expect(health.connected).toBe(true);
      expect(typeof health.detail).toBe('string');
      await h.source.close();
    });
  });
}
