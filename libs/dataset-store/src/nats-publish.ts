import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { buildSnapshotFromInput, canonicalBytesVersion, customIssue, formatIssuePath, issueCount, validateDataset, withUnicodeEscapes, type Compress, type DatasetInput, type Issue } from '@reviews/domain';
import { callerDirectory, ConfigError, displayedServers, loadConfig, natsAccessOf, SpanKind, withSpan, type NatsAccess } from '@reviews/runtime';
import { NotDatasetJson, parseDatasetJson } from './dataset-bytes.js';
import { datasetFileRefusal } from './file-source.js';
import { connectNats } from './nats-connect.js';
import { DatasetTooLargeError, NatsDatasetStore, PointerMovedError, PointerOutcomeUnknownError, type PublishOutcome, type StoreNotEmpty } from './nats-store.js';
import { publishTraceparent } from './nats-trace.js';
import { MAX_DATASET_BYTES, tooLargeProblem } from './source.js';

/** Exit codes of `npm run dataset:publish` (documented in the README's NATS section). */
export const PUBLISH_EXIT = { ok: 0, invalidDataset: 1, usage: 2, natsUnavailable: 3 } as const;

/** Publish only when the store holds no dataset yet, so a seed never replaces real data. */
const IF_EMPTY = '--if-empty';
/** Validate only, NATS_URL or not: how a standalone publisher checks a file before saving it over DATASET_FILE. */
const CHECK = '--check';

/** How long the CLI waits for NATS before giving up with a clear message. */
const CONNECT_TIMEOUT_MS = 5_000;

export interface PublishCliIo {
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

export type DatasetFileRead = { ok: true; input: DatasetInput } | { ok: false; issues: Issue[] };

/**
 * Compressing cannot fail on bytes that rendered, and it is most of a build's CPU (at 2,000 reviews
 * ~100 of ~230 ms, cold ~200 ms): the publish check builds everything else and leaves the bodies as they are.
 */
const skipCompression: Compress = (identity) => ({ gzip: identity, br: identity });

/** Read, parse and validate a dataset file; every problem comes back as an issue with its path. `shown` names the file in them, as its user gave it. */
export async function readDatasetFile(path: string, shown: string): Promise<DatasetFileRead> {
  let bytes: Buffer;
  try {
    // Refused before reading, as the pods' file source does: /dev/zero grew without bound, a named pipe blocked.
    const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const refusal = datasetFileRefusal(await handle.stat());
      if (refusal !== null) return { ok: false, issues: [{ code: refusal.reason, path: [], message: `${shown}: ${refusal.problem}` }] };
      bytes = await handle.readFile();
    } finally {
      await handle.close();
    }
  } catch (error) {
    return { ok: false, issues: [{ code: 'unreadable_file', path: [], message: `cannot read ${shown}: ${(error as Error).message}` }] };
  }
  let raw: unknown;
  try {
    raw = parseDatasetJson(bytes);
  } catch (error) {
    if (!(error instanceof NotDatasetJson)) throw error;
    return { ok: false, issues: [error.issue] };
  }
  const validated = validateDataset(raw);
  if (!validated.ok) return validated;
  const future = generatedLaterThan(validated.input, new Date());
  if (future.length > 0) return { ok: false, issues: future };
  try {
    // Build once here (all but compression) so a dataset no replica could build is refused before it is published.
    buildSnapshotFromInput(validated.input, { baseUrl: 'http://publish-check.invalid', publishedAt: new Date(), compress: skipCompression });
  } catch (error) {
    return { ok: false, issues: [{ code: 'build_error', path: [], message: `derivation failed: ${(error as Error).message}` }] };
  }
  return validated;
}

/** How far a dataset's times may run ahead of this machine's clock: a clock some hours off is not the publisher's mistake; a year is. */
const CLOCK_SKEW_MS = 24 * 60 * 60_000;

/**
 * A dataset is generated before it is published. The schema checks only that reviews are not dated
 * after `generated_at`'s day, so a year typed wrong in both (2062 for 2026) passed, and the feeds'
 * `updated` and every since result then held that review at the top for decades (publisher audit).
 */
function generatedLaterThan(input: DatasetInput, now: Date): Issue[] {
  const latest = now.getTime() + CLOCK_SKEW_MS;
  const times: [Issue['path'], string][] = [
    [['generated_at'], input.generated_at],
    [['analysis', 'generated_at'], input.analysis.generated_at],
  ];
  return times
    .filter(([, time]) => Date.parse(time) > latest)
    .map(([path, time]) => customIssue(path, `${time} is more than a day after this machine's clock (${now.toISOString()}): a dataset is generated before it is published; check the year`));
}

/**
 * What a terminal acts on or what reorders a line: C0 controls but tab and line feed (ESC starts a sequence, CR
 * rewrites the line), DEL, C1 controls (U+009B is CSI to some terminals) and bidirectional formatting characters.
 */
const TERMINAL_CONTROL = /(?![\t\n])\p{Cc}|[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu;

/**
 * `NATS_URL=… npm run dataset:publish -- [--if-empty] FILE`: validate, derive and publish. With
 * `--if-empty` (the chart's seed Job) the store is left alone when it already holds a dataset. Exit 0
 * when published, already current or left alone; 1 with every issue printed when the dataset is
 * invalid (the pointer is not touched); 2 for usage/configuration errors; 3 when NATS is
 * unreachable or the store fails (the line says when the pointer moved all the same, or may have).
 * What it prints quotes the dataset (keys, values, references) and the file's name, with
 * TERMINAL_CONTROL escaped: a key holding `ESC [2J` cleared the screen of whoever checked the file.
 */
export async function runPublishCli(args: readonly string[], env: NodeJS.ProcessEnv, terminal: PublishCliIo): Promise<number> {
  const startedAt = new Date();
  const safe = (line: string) => withUnicodeEscapes(line, TERMINAL_CONTROL);
  const io: PublishCliIo = { out: (line) => terminal.out(safe(line)), err: (line) => terminal.err(safe(line)) };
  const usage = `usage: NATS_URL=nats://host:4222 npm run dataset:publish -- [${IF_EMPTY}] FILE\n       npm run dataset:publish -- ${CHECK} FILE   (validate only, publish nothing)`;
  const options = args.filter((arg) => arg.startsWith('-') && arg !== '--');
  const files = args.filter((arg) => !arg.startsWith('-'));
  if (options.includes('--help') || options.includes('-h')) {
    io.out(usage);
    return PUBLISH_EXIT.ok;
  }
  const unknown = options.filter((option) => option !== IF_EMPTY && option !== CHECK);
  const problem =
    unknown.length > 0
      ? `unknown option ${unknown.join(', ')}`
      : options.includes(IF_EMPTY) && options.includes(CHECK)
        ? `${CHECK} publishes nothing; ${IF_EMPTY} does not go with it`
        : files.length === 0 ? 'no dataset FILE given' : files.length > 1 ? `one dataset FILE at a time, got ${files.length}: ${files.join(', ')}` : null;
  const file = files[0];
  if (problem !== null || file === undefined) {
    io.err(problem ?? 'no dataset FILE given');
    io.err(usage);
    return PUBLISH_EXIT.usage;
  }
  // Read where the caller is; said as they gave it.
  const path = resolve(callerDirectory(env, 'dataset:publish'), file);
  if (options.includes(CHECK)) return checkDatasetFile(file, path, io);
  const ifEmpty = options.includes(IF_EMPTY);
  let servers: NatsAccess;
  let replicas: number;
  try {
    const config = loadConfig(env);
    const nats = natsAccessOf(config);
    if (nats === undefined) throw new ConfigError(['NATS_URL: required to publish (e.g. nats://127.0.0.1:4222)']);
    servers = nats;
    replicas = config.NATS_REPLICAS;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.err(error.message);
    return PUBLISH_EXIT.usage;
  }

  const read = await readDatasetFile(path, file);
  if (!read.ok) return reportInvalid(file, read.issues, io);

  let nc: NatsConnection;
  try {
    nc = await connectNats(servers, { name: 'dataset-publish', timeout: CONNECT_TIMEOUT_MS, maxReconnectAttempts: 0 });
  } catch (error) {
    io.err(`cannot reach NATS at ${displayedServers(servers)}: ${(error as Error).message}; nothing published`);
    return PUBLISH_EXIT.natsUnavailable;
  }
  try {
    const outcome = await withSpan('dataset publish', { kind: SpanKind.PRODUCER, attributes: { 'messaging.system': 'nats' } }, async (span) => {
      const store = await NatsDatasetStore.open(nc, replicas);
      const publishOptions = { traceparent: publishTraceparent(), startedAt };
      const result = ifEmpty ? await store.publishIfEmpty(read.input, publishOptions) : await store.publish(read.input, publishOptions);
      if (result.status !== 'store-not-empty') span.setAttribute('dataset.version', result.version);
      return result;
    });
    io.out(describe(outcome));
    if ('pruneProblem' in outcome && outcome.pruneProblem !== undefined) io.err(`warning: old dataset objects were left for the next publish to remove: ${outcome.pruneProblem}`);
    return PUBLISH_EXIT.ok;
  } catch (error) {
    if (error instanceof DatasetTooLargeError) return reportInvalid(file, [{ code: 'too_large', path: [], message: error.message }], io);
    // Either may have changed the current dataset: the message says what is known.
    if (error instanceof PointerMovedError || error instanceof PointerOutcomeUnknownError) {
      io.err(`publishing to NATS at ${displayedServers(servers)}: ${error.message}`);
      return PUBLISH_EXIT.natsUnavailable;
    }
    io.err(`publishing to NATS at ${displayedServers(servers)} failed: ${(error as Error).message}; the current dataset is unchanged`);
    return PUBLISH_EXIT.natsUnavailable;
  } finally {
    await nc.close().catch(() => undefined);
  }
}

function reportInvalid(file: string, issues: readonly Issue[], io: PublishCliIo): number {
  io.err(`${file}: invalid dataset, nothing published (${issueCount(issues)}):`);
  for (const issue of issues) io.err(`  ${formatIssuePath(issue.path)}: ${issue.message} [${issue.code}]`);
  return PUBLISH_EXIT.invalidDataset;
}

/** `--check`: the checks a publish makes before it connects, and what the file would publish as. */
async function checkDatasetFile(file: string, path: string, io: PublishCliIo): Promise<number> {
  const read = await readDatasetFile(path, file);
  if (!read.ok) return reportInvalid(file, read.issues, io);
  const canonical = JSON.stringify(read.input);
  const size = Buffer.byteLength(canonical);
  // A publish would store these bytes: the store's limit applies to them, not to the file's layout.
  if (size > MAX_DATASET_BYTES) return reportInvalid(file, [{ code: 'too_large', path: [], message: tooLargeProblem(size) }], io);
  const { reviews } = read.input;
  const verified = reviews.filter((review) => review.verified).length;
  io.out(`${file}: valid dataset ${canonicalBytesVersion(canonical)} (${reviews.length} review${reviews.length === 1 ? '' : 's'}, ${verified} verified); nothing published`);
  return PUBLISH_EXIT.ok;
}

function describe(outcome: PublishOutcome | StoreNotEmpty): string {
  if (outcome.status === 'store-not-empty') {
    const held = outcome.current.ok ? `${outcome.current.pointer.version} (published ${outcome.current.pointer.published_at})` : `a pointer this version cannot read (${outcome.current.problem})`;
    return `the store already holds ${held}; ${IF_EMPTY}: nothing published`;
  }
  if (outcome.status === 'already-current') return `${outcome.version} already current (published ${outcome.pointer.published_at}); nothing changed`;
  const published = `${outcome.version} published (${outcome.pointer.size} bytes, traceparent ${outcome.pointer.traceparent ?? 'none'})`;
  const late = outcome.confirmedLate ? `${published}; NATS confirmed the pointer move late (its first answer never came)` : published;
  return outcome.replacedConcurrent === undefined ? late : `${late}; it replaced ${outcome.replacedConcurrent}, which another publish made while this one ran`;
}
