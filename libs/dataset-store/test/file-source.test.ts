import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, expect, afterEach } from '@jest/globals';
import { pino } from 'pino';
import { FileDatasetSource, type PublishedDataset } from '@reviews/dataset-store';
import { datasetBytes, describeDatasetSourceContract } from './source-contract.js';
import { waitFor } from '../../../test/support/eventually.js';

const logger = pino({ level: 'silent' });

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'dataset-source-'));
}

describeDatasetSourceContract('file', async (initial) => {
  const dir = await tempDir();
  const file = join(dir, 'dataset.json');
  if (initial) await writeFile(file, initial);
  const source = new FileDatasetSource(file, { logger, debounceMs: 20 });
  return {
    source,
    publish: (bytes) => writeFile(file, bytes),
    cleanup: async () => {
      await source.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe('FileDatasetSource', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function open(initial: Uint8Array | null) {
    const dir = await tempDir();
    const file = join(dir, 'dataset.json');
    if (initial) await writeFile(file, initial);
    const source = new FileDatasetSource(file, { logger, debounceMs: 20 });
    const received: PublishedDataset[] = [];
    cleanups.push(async () => {
      await source.close();
      await rm(dir, { recursive: true, force: true });
    });
    await source.subscribe((d) => {
      received.push(d);
    });
    return { dir, file, source, received };
  }

  it('sees an editor-style save (write a temporary file, rename it over the original)', async () => {
    const { dir, file, received } = await open(datasetBytes(1));
    const temporary = join(dir, '.dataset.json.swp');
    await writeFile(temporary, datasetBytes(2));
    await rename(temporary, file);
    await waitFor(() => received.length === 2, 5000, 'the renamed file');
    expect(Buffer.from(received[1]!.bytes).equals(Buffer.from(datasetBytes(2)))).toBe(true);
  });

  it('uses the file mtime as the publish time', async () => {
    const { received } = await open(datasetBytes(1));
    expect(Math.abs(received[0]!.publishedAt.getTime() - Date.now())).toBeLessThan(60_000);
  });

  it('reports a missing file as disconnected, then recovers when it appears', async () => {
    const { file, source, received } = await open(null);
    expect(source.health().connected).toBe(false);
    expect(source.health().detail).toContain('ENOENT');
    await writeFile(file, datasetBytes(3));
    await waitFor(() => received.length === 1, 5000, 'the new file');
    expect(source.health().connected).toBe(true);
  });

  it('survives a directory that does not exist: no delivery, reported unhealthy', async () => {
    const source = new FileDatasetSource(join(tmpdir(), 'no-such-directory-for-datasets', 'dataset.json'), { logger });
    cleanups.push(() => source.close());
    const received: PublishedDataset[] = [];
    await source.subscribe((d) => {
      received.push(d);
    });
    expect(received).toHaveLength(0);
    expect(source.health()).toMatchObject({ connected: false });
    expect(source.health().detail).toContain('ENOENT');
  });

  it('delivers unparseable bytes too: judging content is the follower\'s job', async () => {
    const { file, received } = await open(datasetBytes(1));
    await writeFile(file, '{ not json');
    await waitFor(() => received.length === 2, 5000, 'the broken file');
    expect(Buffer.from(received[1]!.bytes).toString()).toBe('{ not json');
  });
});
