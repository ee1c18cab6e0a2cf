import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rename, rm, symlink, truncate, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, it, expect, afterEach } from '@jest/globals';
import { pino } from 'pino';
import { FileDatasetSource, MAX_DATASET_BYTES, type PublishedDataset } from '@reviews/dataset-store';
import { Counter, createMetrics } from '@reviews/runtime';
import { datasetBytes, describeDatasetSourceContract } from './source-contract.js';
import { waitFor } from '../../../test/support/eventually.js';

const logger = pino({ level: 'silent' });
const run = promisify(execFile);

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
    // Last in, first out: each source closes before its directory goes.
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** A source of `file`, subscribed, with what it delivered; closed after the test. */
  async function subscribed(file: string, debounceMs = 20) {
    const source = new FileDatasetSource(file, { logger, debounceMs, pollIntervalMs: 100 });
    const received: PublishedDataset[] = [];
    cleanups.push(() => source.close());
    await source.subscribe((d) => {
      received.push(d);
    });
    return { source, received };
  }

  async function open(initial: Uint8Array | null, debounceMs = 20) {
    const dir = await tempDir();
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'dataset.json');
    if (initial) await writeFile(file, initial);
    return { dir, file, ...(await subscribed(file, debounceMs)) };
  }

  /** Runs `step` every `everyMs` until the returned stop is awaited. */
  function repeatedly(step: (n: number) => Promise<void>, everyMs: number): () => Promise<void> {
    let going = true;
    const done = (async () => {
      for (let n = 0; going; n++) {
        await step(n);
        await new Promise((resolve) => setTimeout(resolve, everyMs));
      }
    })();
    return async () => {
      going = false;
      await done;
    };
  }

  it('sees an editor-style save (write a temporary file, rename it over the original)', async () => {
    const { dir, file, received } = await open(datasetBytes(1));
    const temporary = join(dir, '.dataset.json.swp');
    await writeFile(temporary, datasetBytes(2));
    await rename(temporary, file);
    await waitFor(() => received.length === 2, 5000, 'the renamed file');
    expect(Buffer.from(received[1]!.bytes).equals(Buffer.from(datasetBytes(2)))).toBe(true);
  });

  // The cache audit: a log appended beside the file every 50 ms kept restarting the debounce, and a
  // dataset renamed in was served only once the writing stopped, 8 s later.
  it('reads a save within about a second while another file in the directory never falls quiet', async () => {
    const { dir, file, received } = await open(datasetBytes(1), 300);
    const stopLogging = repeatedly((line) => writeFile(join(dir, 'service.log'), `line ${line}\n`, { flag: 'a' }), 10);
    try {
      await writeFile(join(dir, 'next.json'), datasetBytes(2));
      await rename(join(dir, 'next.json'), file);
      await waitFor(() => received.length === 2, 2500, 'the renamed file, while the log is still written');
    } finally {
      await stopLogging();
    }
  });

  // The review of that fix: reading a second after the first event read a file written in place mid-write.
  it('waits for a file written in place to fall quiet, however long the writing takes', async () => {
    const { file, received } = await open(datasetBytes(1), 300);
    const whole = Buffer.from(datasetBytes(2));
    const chunk = Math.ceil(whole.length / 30);
    await writeFile(file, '');
    const stopWriting = repeatedly((n) => (n * chunk < whole.length ? writeFile(file, whole.subarray(n * chunk, (n + 1) * chunk), { flag: 'a' }) : Promise.resolve()), 50);
    await waitFor(() => received.length === 2, 5000, 'the whole file, once the writing stopped');
    await stopWriting();
    expect(Buffer.from(received[1]!.bytes).equals(whole)).toBe(true);
  });

  // A hostile or careless publisher's audit: a symlink to /dev/zero grew memory without bound, and a
  // named pipe held the read (and every later load) until a writer came, while /readyz said nothing.
  it.each([
    ['a named pipe', 'not_regular_file', 'it is a named pipe, not a regular file; save the dataset as a file (write beside it, then rename)', (path: string) => run('mkfifo', [path])],
    ['a symlink to a device', 'not_regular_file', 'it is a device, not a regular file; save the dataset as a file (write beside it, then rename)', (path: string) => symlink('/dev/zero', path)],
    ['a file over the size limit (sparse)', 'too_large', `it holds ${MAX_DATASET_BYTES + 1} bytes; a dataset may have at most ${MAX_DATASET_BYTES}`, (path: string) => writeFile(path, '').then(() => truncate(path, MAX_DATASET_BYTES + 1))],
    // Unreadable (a permission denied alike: tests run as root, whom permissions never stop) stays so until the next save.
    ['a symlink to itself', 'unreadable', 'it cannot be read (ELOOP); check its permissions and, for a symlink, where it leads', (path: string) => symlink('dataset.json', path)],
  ])('refuses %s saved over the file, at once and counted, keeps the current dataset, and takes the next regular file', async (_label, reason, problem, make) => {
    const dir = await tempDir();
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'dataset.json');
    await writeFile(file, datasetBytes(1));
    const metrics = createMetrics();
    const failures = new Counter({ name: 'dataset_load_failures_total', help: 'test', labelNames: ['service', 'reason'] as const, registers: [metrics.registry] });
    const source = new FileDatasetSource(file, { logger, debounceMs: 20, pollIntervalMs: 100, metrics: { registry: metrics.registry, service: 'test' } });
    cleanups.push(() => source.close());
    const received: PublishedDataset[] = [];
    await source.subscribe((d) => {
      received.push(d);
    });
    const counted = async () => (await failures.get()).values.find((v) => v.labels.reason === reason)?.value;
    expect(await counted()).toBe(0);

    const odd = join(dir, '.odd');
    await make(odd);
    await rename(odd, file);
    await waitFor(() => source.health().lastRefusal !== undefined, 5000, 'the refusal');
    expect(source.health().lastRefusal?.summary).toBe(`dataset file refused (${reason}): ${file}: ${problem}`);
    // What /readyz says of the source: reached, unless it cannot be read.
    expect(source.health()).toMatchObject(reason === 'unreadable' ? { connected: false, detail: `cannot read ${file}: ELOOP` } : { connected: true, detail: `watching ${file}` });
    expect(await counted()).toBe(1);
    expect(received).toHaveLength(1);

    // A docs audit: every other change in the directory refused and counted it again, and a log written
    // beside it fed itself ten refusals a second. It stands until the file is saved again.
    for (let write = 0; write < 3; write++) {
      await writeFile(join(dir, 'neighbour.log'), `line ${write}\n`, { flag: 'a' });
      for (const until = Date.now() + 200; Date.now() < until; await new Promise((resolve) => setTimeout(resolve, 20))) expect(await counted()).toBe(1);
    }

    const next = join(dir, '.next');
    await writeFile(next, datasetBytes(2));
    await rename(next, file);
    await waitFor(() => received.length === 2, 5000, 'the regular file saved after it');
    expect(source.health().lastRefusal).toBeUndefined();
  });

  // A publisher's audit: a file saved with its old mtime kept (cp -p, rsync -t, tar) counted 27 years of
  // propagation; one dated in the future (touch -d) made the dataset's age negative.
  it('takes the time the file was saved, not its mtime, as the publish time', async () => {
    const { dir, file, received } = await open(datasetBytes(1));
    expect(Math.abs(received[0]!.publishedAt.getTime() - Date.now())).toBeLessThan(60_000);
    for (const [n, mtime] of [[2, new Date('2000-01-01T00:00:00Z')], [3, new Date('2099-01-01T00:00:00Z')]] as const) {
      const saved = join(dir, `.saved-${n}`);
      await writeFile(saved, datasetBytes(n));
      await utimes(saved, mtime, mtime);
      await rename(saved, file);
      await waitFor(() => received.length === n, 5000, `the file dated ${mtime.toISOString()}`);
      expect(Math.abs(received[n - 1]!.publishedAt.getTime() - Date.now())).toBeLessThan(60_000);
    }
  });

  it('reports a missing file as disconnected, then recovers when it appears', async () => {
    const { file, source, received } = await open(null);
    expect(source.health().connected).toBe(false);
    expect(source.health().detail).toContain('ENOENT');
    await writeFile(file, datasetBytes(3));
    await waitFor(() => received.length === 1, 5000, 'the new file');
    expect(source.health().connected).toBe(true);
  });

  // A publisher's audit: /readyz went on saying "cannot read …: ENOENT" for a path that now held a directory.
  it('reports a missing file that becomes a directory as reached again, and refused', async () => {
    const { file, source } = await open(null);
    expect(source.health()).toMatchObject({ connected: false, detail: `cannot read ${file}: ENOENT` });
    await mkdir(file);
    await waitFor(() => source.health().lastRefusal !== undefined, 5000, 'the refusal');
    expect(source.health()).toMatchObject({ connected: true, detail: `watching ${file}`, lastRefusal: { summary: expect.stringContaining('it is a directory') } });
  });

  it('survives a directory that does not exist, then serves the file once the directory and file appear', async () => {
    const dir = await tempDir();
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'not-yet', 'dataset.json');
    const { source, received } = await subscribed(file);
    expect(received).toHaveLength(0);
    expect(source.health()).toMatchObject({ connected: false });
    expect(source.health().detail).toContain('ENOENT');
    await mkdir(join(dir, 'not-yet'));
    await writeFile(file, datasetBytes(1));
    await waitFor(() => received.length === 1, 5000, 'the file in the new directory');
    expect(source.health().connected).toBe(true);
    // Watched from then on: a later save is seen too.
    await writeFile(file, datasetBytes(2));
    await waitFor(() => received.length === 2, 5000, 'the next save');
  });

  it('recovers when the directory is removed and created again', async () => {
    const { dir, file, source, received } = await open(datasetBytes(1));
    await rm(dir, { recursive: true });
    await waitFor(() => source.health().detail.includes('ENOENT'), 5000, 'the missing file to be noticed');
    await mkdir(dir);
    await writeFile(file, datasetBytes(2));
    await waitFor(() => received.length === 2, 5000, 'the file in the recreated directory');
    expect(Buffer.from(received[1]!.bytes).equals(Buffer.from(datasetBytes(2)))).toBe(true);
    expect(source.health()).toEqual({ connected: true, detail: `watching ${file}` });
    await writeFile(file, datasetBytes(3));
    await waitFor(() => received.length === 3, 5000, 'the next save');
  });

  describe('when the path is a symlink to a file in another directory', () => {
    async function linked() {
      const dir = await tempDir();
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      await Promise.all([mkdir(join(dir, 'served')), mkdir(join(dir, 'data'))]);
      const target = join(dir, 'data', 'dataset.json');
      await writeFile(target, datasetBytes(1));
      const link = join(dir, 'served', 'dataset.json');
      await symlink(target, link);
      return { dir, target, ...(await subscribed(link)) };
    }

    it('sees a write to the target', async () => {
      const { target, received } = await linked();
      await writeFile(target, datasetBytes(2));
      await waitFor(() => received.length === 2, 5000, 'the write to the target');
      expect(Buffer.from(received[1]!.bytes).equals(Buffer.from(datasetBytes(2)))).toBe(true);
    });

    it('sees a file renamed over the target', async () => {
      const { dir, target, received } = await linked();
      await writeFile(join(dir, 'data', '.dataset.json.tmp'), datasetBytes(2));
      await rename(join(dir, 'data', '.dataset.json.tmp'), target);
      await waitFor(() => received.length === 2, 5000, 'the renamed target');
      expect(Buffer.from(received[1]!.bytes).equals(Buffer.from(datasetBytes(2)))).toBe(true);
    });

    it('follows a ConfigMap-style swap of the linked directory, then writes into the new one', async () => {
      // dataset.json -> ..data/dataset.json, ..data -> ..v1, swapped to ..v2 by renaming a new link over it.
      const dir = await tempDir();
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      for (const [version, seed] of [['..v1', 1], ['..v2', 2]] as const) {
        await mkdir(join(dir, version));
        await writeFile(join(dir, version, 'dataset.json'), datasetBytes(seed));
      }
      await symlink('..v1', join(dir, '..data'));
      await symlink('..data/dataset.json', join(dir, 'dataset.json'));
      const { received } = await subscribed(join(dir, 'dataset.json'));
      await symlink('..v2', join(dir, '..data_tmp'));
      await rename(join(dir, '..data_tmp'), join(dir, '..data'));
      await rm(join(dir, '..v1'), { recursive: true });
      await waitFor(() => received.length === 2, 5000, 'the swap');
      await writeFile(join(dir, '..v2', 'dataset.json'), datasetBytes(3));
      await waitFor(() => received.length === 3, 5000, 'the write into the new directory');
      expect(Buffer.from(received[2]!.bytes).equals(Buffer.from(datasetBytes(3)))).toBe(true);
    });
  });

  // A review of the refusal dedupe: a ConfigMap swap to a second unreadable file replaced only a link midway, and went uncounted.
  it('counts each ConfigMap swap to a file that cannot be read as a refusal of its own', async () => {
    const dir = await tempDir();
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await mkdir(join(dir, '..v0'));
    await writeFile(join(dir, '..v0', 'dataset.json'), datasetBytes(1));
    await symlink('..v0', join(dir, '..data'));
    await symlink('..data/dataset.json', join(dir, 'dataset.json'));
    const metrics = createMetrics();
    const failures = new Counter({ name: 'dataset_load_failures_total', help: 'test', labelNames: ['service', 'reason'] as const, registers: [metrics.registry] });
    const source = new FileDatasetSource(join(dir, 'dataset.json'), { logger, debounceMs: 20, pollIntervalMs: 100, metrics: { registry: metrics.registry, service: 'test' } });
    cleanups.push(() => source.close());
    await source.subscribe(() => undefined);
    const unreadable = async () => (await failures.get()).values.find((v) => v.labels.reason === 'unreadable')?.value;
    for (const [swap, version] of [[1, '..v1'], [2, '..v2']] as const) {
      // Each version's dataset.json a link to itself: unreadable (ELOOP), as a file without read permission is to anyone but root.
      await mkdir(join(dir, version));
      await symlink('dataset.json', join(dir, version, 'dataset.json'));
      await symlink(version, join(dir, '..data_tmp'));
      await rename(join(dir, '..data_tmp'), join(dir, '..data'));
      await waitFor(async () => (await unreadable()) === swap, 5000, `refusal ${swap}`);
    }
  });

  it('delivers unparseable bytes too: judging content is the follower\'s job', async () => {
    const { file, received } = await open(datasetBytes(1));
    await writeFile(file, '{ not json');
    await waitFor(() => received.length === 2, 5000, 'the broken file');
    expect(Buffer.from(received[1]!.bytes).toString()).toBe('{ not json');
  });
});
