import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ObjectStore } from '@nats-io/obj';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { datasetVersion } from '@reviews/domain';
import { MAX_DATASET_BYTES, NatsDatasetStore, POINTER_BUCKET, POINTER_KEY, PUBLISH_EXIT, runPublishCli } from '@reviews/dataset-store';
import { buildDataset } from '../../domain/test/fixtures.js';
import { freePort, startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import { startTcpRelay, type TcpRelay } from '../../../test/support/tcp-relay.js';

async function publish(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runPublishCli(args, env, { out: (line) => out.push(line), err: (line) => err.push(line) });
  return { code, out, err };
}

interface NatsFixture {
  server: NatsServerHandle;
  dir: string;
  nc: NatsConnection;
  /** The CLI's environment: NATS_URL of this server. */
  env: NodeJS.ProcessEnv;
}

/** A private nats-server and a temporary directory holding `files` as JSON, for the describe block that calls it. */
function natsAndFiles(prefix: string, files: Record<string, unknown>): NatsFixture {
  const fixture = {} as NatsFixture;
  beforeAll(async () => {
    fixture.server = await startNatsServer();
    fixture.dir = await mkdtemp(join(tmpdir(), prefix));
    for (const [name, content] of Object.entries(files)) await writeFile(join(fixture.dir, name), JSON.stringify(content));
    fixture.env = { NATS_URL: fixture.server.url };
    fixture.nc = await connect({ servers: fixture.server.url });
  });
  afterAll(async () => {
    await fixture.nc?.close();
    await fixture.server?.dispose();
    if (fixture.dir) await rm(fixture.dir, { recursive: true, force: true });
  });
  return fixture;
}

describe('dataset:publish CLI against a real nats-server', () => {
  let pointers: KV;
  const valid = buildDataset({ reviews: 12, seed: 21 });
  const nats = natsAndFiles('publish-cli-', { 'valid.json': valid });

  it('publishes a valid file and prints its version', async () => {
    const result = await publish(['--', join(nats.dir, 'valid.json')], nats.env);
    expect(result).toMatchObject({ code: PUBLISH_EXIT.ok, err: [] });
    expect(result.out.join('\n')).toContain(`${datasetVersion(valid)} published`);
    pointers = await new Kvm(jetstream(nats.nc)).open(POINTER_BUCKET);
    expect((await pointers.get(POINTER_KEY))?.json()).toMatchObject({ version: datasetVersion(valid), object: `v/${datasetVersion(valid)}.json` });
  });

  it('publishing the same content again exits 0 with "already current" and leaves the pointer alone', async () => {
    const before = await pointers.get(POINTER_KEY);
    const result = await publish([join(nats.dir, 'valid.json')], nats.env);
    expect(result.code).toBe(PUBLISH_EXIT.ok);
    expect(result.out.join('\n')).toContain(`${datasetVersion(valid)} already current`);
    expect((await pointers.get(POINTER_KEY))?.revision).toBe(before?.revision);
  });

  it('prints every issue with its path and exits non-zero on an invalid dataset; the pointer is untouched', async () => {
    const broken = structuredClone(valid) as unknown as { reviews: Array<Record<string, unknown>>; business: Record<string, unknown> };
    broken.reviews[0]!.rating = 9;
    broken.reviews[1]!.date = '2025-02-30';
    broken.business.url = 'not a url';
    await writeFile(join(nats.dir, 'invalid.json'), JSON.stringify(broken));
    const before = await pointers.get(POINTER_KEY);

    const result = await publish([join(nats.dir, 'invalid.json')], nats.env);
    expect(result.code).toBe(PUBLISH_EXIT.invalidDataset);
    const stderr = result.err.join('\n');
    expect(stderr).toContain('nothing published');
    expect(stderr).toMatch(/reviews\[0\]\.rating: /);
    expect(stderr).toMatch(/reviews\[1\]\.date: /);
    expect(stderr).toMatch(/business\.url: /);
    expect((await pointers.get(POINTER_KEY))?.revision).toBe(before?.revision);
  });

  it('rejects a file that is not JSON', async () => {
    await writeFile(join(nats.dir, 'truncated.json'), JSON.stringify(valid).slice(0, 200));
    const result = await publish([join(nats.dir, 'truncated.json')], nats.env);
    expect(result.code).toBe(PUBLISH_EXIT.invalidDataset);
    expect(result.err.join('\n')).toContain('(root): not valid JSON');
  });

  it('refuses a file that is not UTF-8, saying where, instead of publishing U+FFFD in its place', async () => {
    // "Zoë" as Latin-1 writes it: 0xEB, which UTF-8 never has alone.
    const [before, after] = JSON.stringify(valid).split('Author 3');
    const latin1 = Buffer.concat([Buffer.from(`${before}Zo`), Buffer.from([0xeb]), Buffer.from(`${after}`)]);
    await writeFile(join(nats.dir, 'latin1.json'), latin1);
    const pointer = await pointers.get(POINTER_KEY);

    const result = await publish([join(nats.dir, 'latin1.json')], nats.env);
    expect(result.code).toBe(PUBLISH_EXIT.invalidDataset);
    expect(result.err.join('\n')).toContain(`(root): not valid UTF-8: malformed byte sequence at byte offset ${Buffer.byteLength(`${before}Zo`)} (0xEB)`);
    expect((await pointers.get(POINTER_KEY))?.revision).toBe(pointer?.revision);
  });

  it('reads a file that starts with a UTF-8 byte order mark as the same dataset', async () => {
    await writeFile(join(nats.dir, 'bom.json'), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(valid))]));
    const result = await publish([join(nats.dir, 'bom.json')], nats.env);
    expect(result).toMatchObject({ code: PUBLISH_EXIT.ok, err: [] });
    expect(result.out.join('\n')).toContain(`${datasetVersion(valid)} already current`);
  });

  it('exits non-zero with a clear message, quickly, when NATS is unreachable', async () => {
    const started = Date.now();
    const result = await publish([join(nats.dir, 'valid.json')], { NATS_URL: `nats://seed:s3cret-pw@127.0.0.1:${await freePort()}` });
    expect(result.code).toBe(PUBLISH_EXIT.natsUnavailable);
    // The seed Job's log shows this line: the URL's password must not be in it.
    expect(result.err.join('\n')).toMatch(/cannot reach NATS at nats:\/\/\*\*\*@127\.0\.0\.1:\d+/);
    expect(result.err.join('\n')).not.toContain('s3cret-pw');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('explains usage and configuration errors, saying what is wrong', async () => {
    const none = await publish([], nats.env);
    expect(none.code).toBe(PUBLISH_EXIT.usage);
    expect(none.err.join('\n')).toContain('no dataset FILE given');
    const two = await publish(['a.json', 'b.json'], nats.env);
    expect([two.code, two.err[0]]).toEqual([PUBLISH_EXIT.usage, 'one dataset FILE at a time, got 2: a.json, b.json']);
    const help = await publish(['--help'], nats.env);
    expect([help.code, help.out.join('\n')]).toEqual([PUBLISH_EXIT.ok, expect.stringContaining('usage: ')]);
    const noUrl = await publish([join(nats.dir, 'valid.json')], {});
    expect(noUrl.code).toBe(PUBLISH_EXIT.usage);
    expect(noUrl.err.join('\n')).toContain('NATS_URL');
  });

  it('reports a NATS_URL that is not a URL as a configuration error, not as NATS being unreachable', async () => {
    const result = await publish([join(nats.dir, 'valid.json')], { NATS_URL: 'http://x y' });
    expect(result.code).toBe(PUBLISH_EXIT.usage);
    expect(result.err.join('\n')).toContain('NATS_URL: "http://x y" is not a server URL');
    expect(result.err.join('\n')).not.toContain('cannot reach NATS');
  });
});

/** What a client sends to write the dataset pointer (HPUB with the compare-and-set header, or PUB). */
const POINTER_WRITE = `PUB $KV.${POINTER_BUCKET}.${POINTER_KEY} `;

/**
 * A TCP relay to `target` that passes everything until a client writes the dataset pointer, and then
 * loses its answer: `holdMs` holds what the server sends for that long (an answer that comes too late),
 * `drop` forwards the write and nothing more, either way (a server that stops answering right after).
 */
function relayLosingPointerAnswer(target: string, lose: { holdMs: number } | 'drop'): Promise<TcpRelay> {
  return startTcpRelay(target, (client, upstream) => {
    let state: 'passing' | 'holding' | 'dropping' | 'passed' = 'passing';
    let tail = '';
    const held: Buffer[] = [];
    client.on('data', (chunk: Buffer) => {
      if (state === 'dropping') return;
      upstream.write(chunk);
      // The subject may come split across two chunks.
      const seen = tail + chunk.toString('latin1');
      tail = seen.slice(-POINTER_WRITE.length);
      if (state !== 'passing' || !seen.includes(POINTER_WRITE)) return;
      if (lose === 'drop') {
        state = 'dropping';
        return;
      }
      state = 'holding';
      setTimeout(() => {
        state = 'passed';
        for (const part of held.splice(0)) client.write(part);
      }, lose.holdMs);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (state === 'holding') held.push(chunk);
      else if (state !== 'dropping') client.write(chunk);
    });
  });
}

// An audit of resilience under NATS faults: a publish whose pointer move NATS carried out without its
// answer arriving said "the current dataset is unchanged", exit 3, while every replica served it.
describe('dataset:publish when the answer to its pointer move does not arrive', () => {
  const late = buildDataset({ reviews: 12, seed: 41 });
  const lost = buildDataset({ reviews: 12, seed: 42 });
  const nats = natsAndFiles('publish-unanswered-', { 'late.json': late, 'lost.json': lost });
  const current = async () => (await (await new Kvm(jetstream(nats.nc)).open(POINTER_BUCKET)).get(POINTER_KEY))?.json<{ version: string }>().version;

  it('finds out that the pointer moved when NATS answers again: published, exit 0, saying the confirmation was late', async () => {
    // Past the client's 5 s request timeout.
    const relay = await relayLosingPointerAnswer(nats.server.url, { holdMs: 7_000 });
    try {
      const result = await publish([join(nats.dir, 'late.json')], { NATS_URL: relay.url });
      expect(result).toMatchObject({ code: PUBLISH_EXIT.ok, err: [] });
      expect(result.out.join('\n')).toContain(`${datasetVersion(late)} published`);
      expect(result.out.join('\n')).toContain('NATS confirmed the pointer move late');
      expect(await current()).toBe(datasetVersion(late));
    } finally {
      await relay.cut();
    }
  }, 30_000);

  it('says the dataset may have been published, and how to check, when NATS never answers again: exit 3, not "unchanged"', async () => {
    const relay = await relayLosingPointerAnswer(nats.server.url, 'drop');
    try {
      const result = await publish([join(nats.dir, 'lost.json')], { NATS_URL: relay.url });
      expect(result.code).toBe(PUBLISH_EXIT.natsUnavailable);
      const said = result.err.join('\n');
      expect(said).toContain(`moving the pointer to ${datasetVersion(lost)} got no answer`);
      expect(said).toContain('the dataset may have been published');
      expect(said).toContain('/readyz');
      expect(said).not.toContain('unchanged');
    } finally {
      await relay.cut();
    }
    // It was: and the same publish again says so, as the message promises.
    expect(await current()).toBe(datasetVersion(lost));
    const again = await publish([join(nats.dir, 'lost.json')], nats.env);
    expect(again.code).toBe(PUBLISH_EXIT.ok);
    expect(again.out.join('\n')).toContain(`${datasetVersion(lost)} already current`);
  }, 60_000);
});

describe('dataset:publish --if-empty (the chart seed) against a real nats-server', () => {
  const seed = buildDataset({ reviews: 12, seed: 31 });
  const real = buildDataset({ reviews: 12, seed: 32 });
  const nats = natsAndFiles('publish-if-empty-', { 'seed.json': seed, 'real.json': real });
  const pointers = (): Promise<KV> => new Kvm(jetstream(nats.nc)).create(POINTER_BUCKET);

  it('publishes into an empty store', async () => {
    const result = await publish(['--if-empty', join(nats.dir, 'seed.json')], nats.env);
    expect(result).toMatchObject({ code: PUBLISH_EXIT.ok, err: [] });
    expect(result.out.join('\n')).toContain(`${datasetVersion(seed)} published`);
    expect((await (await pointers()).get(POINTER_KEY))?.json()).toMatchObject({ version: datasetVersion(seed) });
  });

  it('leaves a store that holds another dataset alone, exit 0', async () => {
    expect((await publish([join(nats.dir, 'real.json')], nats.env)).code).toBe(PUBLISH_EXIT.ok);
    const before = await (await pointers()).get(POINTER_KEY);

    const result = await publish(['--', '--if-empty', join(nats.dir, 'seed.json')], nats.env);
    expect(result).toMatchObject({ code: PUBLISH_EXIT.ok, err: [] });
    expect(result.out.join('\n')).toContain(`the store already holds ${datasetVersion(real)}`);
    expect(result.out.join('\n')).toContain('nothing published');
    const after = await (await pointers()).get(POINTER_KEY);
    expect(after?.revision).toBe(before?.revision);
    expect(after?.json()).toMatchObject({ version: datasetVersion(real) });
  });

  it('counts a pointer it cannot read as a dataset (it may come from a newer release) and leaves it', async () => {
    const kv = await pointers();
    await kv.put(POINTER_KEY, '{"written_by":"a newer release"}');
    const before = await kv.get(POINTER_KEY);

    const result = await publish(['--if-empty', join(nats.dir, 'seed.json')], nats.env);
    expect(result.code).toBe(PUBLISH_EXIT.ok);
    expect(result.out.join('\n')).toMatch(/already holds a pointer this version cannot read \(pointer is malformed: .*\); --if-empty: nothing published/);
    expect((await kv.get(POINTER_KEY))?.revision).toBe(before?.revision);
  });

  it('publishes over a deleted pointer (the store holds no dataset)', async () => {
    await (await pointers()).delete(POINTER_KEY);
    const result = await publish(['--if-empty', join(nats.dir, 'seed.json')], nats.env);
    expect(result.code).toBe(PUBLISH_EXIT.ok);
    expect(result.out.join('\n')).toContain(`${datasetVersion(seed)} published`);
    expect((await (await pointers()).get(POINTER_KEY))?.json()).toMatchObject({ version: datasetVersion(seed) });
  });

  it('lets exactly one of two racing seeds publish into an empty store', async () => {
    await (await pointers()).purge(POINTER_KEY);
    const [a, b] = await Promise.all([NatsDatasetStore.open(nats.nc, 1), NatsDatasetStore.open(nats.nc, 1)]);
    const outcomes = await Promise.all([a.publishIfEmpty(seed), b.publishIfEmpty(real)]);
    expect(outcomes.map((o) => o.status).sort()).toEqual(['published', 'store-not-empty']);
    const published = outcomes.flatMap((o) => (o.status === 'published' ? [o.version] : []));
    expect((await (await pointers()).get(POINTER_KEY))?.json()).toMatchObject({ version: published[0] });
  });

  // A publisher's audit: two publishes at once both said "published", and the one that replaced the other did not say so.
  it('tells a publish that overtook another, made while it ran, which version it replaced', async () => {
    const [a, b] = await Promise.all([NatsDatasetStore.open(nats.nc, 1), NatsDatasetStore.open(nats.nc, 1)]);
    const other = buildDataset({ reviews: 12, seed: 33 });
    const mine = buildDataset({ reviews: 12, seed: 34 });
    // A reads the pointer, then B publishes whole before A's object is stored: A's move loses its compare-and-set.
    const objects = (a as unknown as { buckets: { objects: ObjectStore } }).buckets.objects;
    const putBlob = objects.putBlob.bind(objects);
    let otherPublished: Promise<unknown> | undefined;
    objects.putBlob = async (...args) => {
      otherPublished ??= b.publish(other);
      await otherPublished;
      return putBlob(...args);
    };
    const outcome = await a.publish(mine);
    expect(await otherPublished).toMatchObject({ status: 'published', version: datasetVersion(other) });
    expect(outcome).toMatchObject({ status: 'published', version: datasetVersion(mine), replacedConcurrent: datasetVersion(other) });
    expect((await (await pointers()).get(POINTER_KEY))?.json()).toMatchObject({ version: datasetVersion(mine) });
    const quiet = await b.publish(buildDataset({ reviews: 12, seed: 35 }), { startedAt: new Date() });
    expect(quiet).not.toHaveProperty('replacedConcurrent');
    // A review's audit: one published while this publish still read its file (before it read the pointer) went unmentioned.
    const startedAt = new Date();
    const meanwhile = await b.publish(buildDataset({ reviews: 12, seed: 36 }));
    expect(await a.publish(buildDataset({ reviews: 12, seed: 37 }), { startedAt })).toMatchObject({ status: 'published', replacedConcurrent: meanwhile.version });
  });

  it('refuses an unknown option', async () => {
    const result = await publish(['--if-emtpy', join(nats.dir, 'seed.json')], nats.env);
    expect(result.code).toBe(PUBLISH_EXIT.usage);
    expect(result.err.join('\n')).toContain('unknown option --if-emtpy');
    expect(result.err.join('\n')).toContain('[--if-empty] FILE');
  });
});

describe('dataset:publish --check (no NATS)', () => {
  // Two reviews from an unverified source: the count of verified ones must tell them apart.
  const built = buildDataset({ reviews: 12, seed: 21 });
  const valid = { ...built, reviews: built.reviews.map((review, i) => (i < 2 ? { ...review, verified: false } : review)) };
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'publish-check-'));
    await writeFile(join(dir, 'valid.json'), JSON.stringify(valid));
    const broken = structuredClone(valid) as unknown as { reviews: Array<Record<string, unknown>> };
    broken.reviews[0]!.rating = 9;
    await writeFile(join(dir, 'invalid.json'), JSON.stringify(broken));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('validates a file without NATS_URL and names the version it would publish as', async () => {
    const result = await publish(['--check', join(dir, 'valid.json')], {});
    expect(result).toEqual({
      code: PUBLISH_EXIT.ok,
      out: [`${join(dir, 'valid.json')}: valid dataset ${datasetVersion(valid)} (12 reviews, 10 verified); nothing published`],
      err: [],
    });
  });

  // A publisher's audit: `cd data && npm run dataset:publish -- --check mine.json` looked in the repository root.
  it('reads a relative FILE where the command was typed (npm names it INIT_CWD), and names it as typed', async () => {
    const fromThere = { npm_lifecycle_event: 'dataset:publish', INIT_CWD: dir };
    expect(await publish(['--check', 'valid.json'], fromThere)).toMatchObject({ code: PUBLISH_EXIT.ok, out: [expect.stringMatching(/^valid\.json: valid dataset /)] });
    const missing = await publish(['--check', 'absent.json'], fromThere);
    expect(missing.err[1]).toBe(`  (root): cannot read absent.json: ENOENT: no such file or directory, open '${join(dir, 'absent.json')}' [unreadable_file]`);
  });

  it('prints every issue of an invalid file as a publish would, and exits 1', async () => {
    const result = await publish(['--check', join(dir, 'invalid.json')], {});
    expect(result.code).toBe(PUBLISH_EXIT.invalidDataset);
    expect(result.err).toEqual([`${join(dir, 'invalid.json')}: invalid dataset, nothing published (1 issue):`, expect.stringMatching(/^ {2}reviews\[0\]\.rating: .* \[too_big\]$/)]);
  });

  // A publisher's audit: the header counted the note saying where validation stopped as issue 1,001.
  it('says "more than 1,000 issues" when validation stopped, not a count that includes its note', async () => {
    const flooded = { ...valid, reviews: valid.reviews.flatMap((review) => Array.from({ length: 150 }, (_, copy) => ({ ...review, id: `${review.id}-${copy}`, rating: 9 }))) };
    const file = join(dir, 'flooded.json');
    await writeFile(file, JSON.stringify(flooded));
    const result = await publish(['--check', file], {});
    expect(result.code).toBe(PUBLISH_EXIT.invalidDataset);
    expect(result.err[0]).toBe(`${file}: invalid dataset, nothing published (more than 1,000 issues):`);
    expect(result.err.at(-1)).toMatch(/validation stopped after the first 1,000/);
  });

  // A publisher's audit: a year typed 2062 for 2026 in generated_at and a review passed, and the feeds put that review first for decades.
  it("refuses a dataset generated more than a day after this machine's clock, naming each time, and takes one an hour ahead", async () => {
    const future = { ...valid, generated_at: '2062-11-01T06:00:00Z', analysis: { ...valid.analysis, generated_at: '2062-11-01T05:30:00Z' } };
    const file = join(dir, 'future.json');
    await writeFile(file, JSON.stringify(future));
    const result = await publish(['--check', file], {});
    expect(result.code).toBe(PUBLISH_EXIT.invalidDataset);
    expect(result.err.slice(1)).toEqual([
      expect.stringMatching(/^ {2}generated_at: 2062-11-01T06:00:00Z is more than a day after this machine's clock \(\d{4}-.*Z\): a dataset is generated before it is published; check the year \[custom\]$/),
      expect.stringMatching(/^ {2}analysis\.generated_at: 2062-11-01T05:30:00Z is more than a day /),
    ]);
    const soon = new Date(Date.now() + 3_600_000).toISOString();
    await writeFile(file, JSON.stringify({ ...valid, generated_at: soon, analysis: { ...valid.analysis, generated_at: soon } }));
    expect((await publish(['--check', file], {})).code).toBe(PUBLISH_EXIT.ok);
  });

  it('counts one review as one', async () => {
    const single = buildDataset({ reviews: 1, seed: 3 });
    const file = join(dir, 'single.json');
    await writeFile(file, JSON.stringify(single));
    const result = await publish(['--check', file], {});
    expect(result.out).toEqual([`${file}: valid dataset ${datasetVersion(single)} (1 review, 1 verified); nothing published`]);
  });

  // A publisher's audit: an unknown key holding ESC [2J cleared the terminal of whoever checked the file.
  it('prints what it quotes from the dataset with terminal controls escaped, a key that is not plain quoted', async () => {
    const hostile = structuredClone(valid) as unknown as { reviews: Array<Record<string, unknown>> };
    hostile.reviews[0]!['\u001b[2J\u001b[31mevil\u009b\u202e'] = 1;
    const file = join(dir, 'hostile.json');
    await writeFile(file, JSON.stringify(hostile));
    const result = await publish(['--check', file], {});
    expect(result.code).toBe(PUBLISH_EXIT.invalidDataset);
    expect(result.err[1]).toBe('  reviews[0]["\\u001b[2J\\u001b[31mevil\\u009b\\u202e"]: Unrecognized key: "\\u001b[2J\\u001b[31mevil\\u009b\\u202e" [unrecognized_keys]');
    expect(result.err.filter((line) => /\p{Cc}|\u202e/u.test(line))).toEqual([]);
  });

  // Read, /dev/zero grew the CLI to 5.9 GB and a named pipe held it until killed.
  it('refuses a device, a named pipe and a directory before reading them, exit 1', async () => {
    const pipe = join(dir, 'pipe.json');
    execFileSync('mkfifo', [pipe]);
    for (const [path, kind] of [['/dev/zero', 'a device'], [pipe, 'a named pipe'], [dir, 'a directory']] as const) {
      const result = await publish(['--check', path], {});
      expect([path, result.code, result.err[1]]).toEqual([path, PUBLISH_EXIT.invalidDataset, expect.stringContaining(`it is ${kind}, not a regular file`)]);
    }
  });

  it('refuses a file larger than the store takes before reading it, exit 1 (not 3, which says NATS failed)', async () => {
    const huge = join(dir, 'huge.json');
    await writeFile(huge, '');
    await truncate(huge, MAX_DATASET_BYTES + 1); // sparse: nothing is written
    const result = await publish(['--check', huge], {});
    expect([result.code, result.err[1]]).toEqual([PUBLISH_EXIT.invalidDataset, expect.stringMatching(/too_large/)]);
  });

  it('does not go with --if-empty', async () => {
    const result = await publish(['--check', '--if-empty', join(dir, 'valid.json')], {});
    expect(result.code).toBe(PUBLISH_EXIT.usage);
    expect(result.err[0]).toBe('--check publishes nothing; --if-empty does not go with it');
  });
});
