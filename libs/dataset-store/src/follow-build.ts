import { buildSnapshotContent, formatIssuePath, issueCount, validateDataset, type Compress, type Issue, type LastModified, type Representation, type SnapshotContent, type SnapshotRepresentations, type ValidatedBefore, type Variant } from '@reviews/domain';
import { NotDatasetJson, parseDatasetJson } from './dataset-bytes.js';

/**
 * A dataset this large (~15,000 reviews and up) retires the worker after its build: the build's
 * garbage (hundreds of MiB at 100,000 reviews) leaves with the worker's heap instead of staying
 * resident in an idle one, and a fresh worker's start-up and cold code are small next to such a
 * build. Below it the worker is kept: at 2,000 reviews start-up and cold code were half the build.
 */
export const RETIRE_AFTER_BYTES = 16 * 1024 * 1024;

export const BUILD_REFUSAL_REASONS = ['invalid_json', 'invalid_dataset', 'build_error'] as const;
export type Rejection = { reason: (typeof BUILD_REFUSAL_REASONS)[number]; summary: string; issues: Issue[] };

export type ContentOutcome = { ok: true; content: SnapshotContent } | { ok: false; rejection: Rejection };

export interface BuildRequest {
  /** The dataset's bytes; a build worker takes them (see follow-offthread.ts). */
  readonly bytes: Uint8Array;
  /** The version of canonical `bytes` (PublishedDataset.canonical); otherwise derived from the parsed input. */
  readonly version?: string;
  readonly baseUrl: string;
  readonly publishedAt: Date;
  /** The version's Last-Modified, decided by the follower against the version it replaces. */
  readonly lastModified: LastModified;
  /**
   * Send the content with only the gzip variant of each body not compressed before, and the brotli
   * variants after it (a swap: requests are served from the current snapshot until the content arrives).
   */
  readonly deferBrotli: boolean;
}

function summarize(issues: readonly Issue[]): string {
  const first = issues.slice(0, 3).map(issueLine);
  return `${issueCount(issues)}: ${first.join('; ')}${issues.length > 3 ? '; ...' : ''}`;
}

/** Where the problem is, when it is somewhere inside: a name repeated in an object is invalid JSON that still has a path. */
function issueLine(issue: Issue): string {
  return issue.path.length === 0 ? issue.message : `${formatIssuePath(issue.path)}: ${issue.message}`;
}

export function buildError(error: unknown): { ok: false; rejection: Rejection } {
  const message = `snapshot build failed: ${(error as Error).message}`;
  return { ok: false, rejection: { reason: 'build_error', summary: message, issues: [{ code: 'build_error', path: [], message }] } };
}

/**
 * A build worker's last validated dataset (`validateDataset`'s `before`). Kept only for datasets up
 * to `limitBytes`: keeping the parsed JSON alive through the build adds its size to the build's peak
 * (hundreds of MiB at 100,000 reviews), and a worker that large builds is retired after each one.
 */
export interface ValidationMemo {
  before: ValidatedBefore | null;
  readonly limitBytes: number;
}

/**
 * What `validateDataset` needs to reuse this validation next time. A function of its own so no local
 * of the build keeps the parsed JSON alive when it is not kept.
 */
function validatedBefore(raw: unknown, input: ValidatedBefore['input']): ValidatedBefore {
  // Valid, so the parsed JSON has the dataset's shape.
  const { reviews, analysis } = raw as { reviews: unknown[]; analysis: { per_review: Record<string, unknown> } };
  return { rawReviews: reviews, rawPerReview: analysis.per_review, input };
}

/** Parse, validate, derive, render and compress: everything of a build but the search indexes. */
export function buildContent({ bytes, version, baseUrl, publishedAt, lastModified }: BuildRequest, compress?: Compress, validation?: ValidationMemo): ContentOutcome {
  let raw: unknown;
  try {
    raw = parseDatasetJson(bytes, { canonical: version !== undefined });
  } catch (error) {
    if (!(error instanceof NotDatasetJson)) throw error;
    // Bytes that are not UTF-8 are not JSON text either (RFC 8259 §8.1): one refusal reason for both.
    return { ok: false, rejection: { reason: 'invalid_json', summary: issueLine(error.issue), issues: [error.issue] } };
  }
  try {
    const validated = validateDataset(raw, validation?.before ?? undefined);
    if (!validated.ok) return { ok: false, rejection: { reason: 'invalid_dataset', summary: summarize(validated.issues), issues: validated.issues } };
    if (validation) validation.before = bytes.byteLength <= validation.limitBytes ? validatedBefore(raw, validated.input) : null;
    // The parsed JSON is as large as the input; let it go before the documents and bodies are built.
    raw = undefined;
    return { ok: true, content: buildSnapshotContent(validated.input, { baseUrl, publishedAt, lastModified, ...(version === undefined ? {} : { version }), ...(compress ? { compress } : {}) }) };
  } catch (error) {
    return buildError(error);
  }
}

const REPRESENTATION_NAMES = ['reviews', 'insights', 'feedJson', 'feedAtom', 'openapi'] as const satisfies readonly (keyof SnapshotRepresentations)[];

function variantsOf(representation: Representation): Variant[] {
  return [representation.identity, representation.gzip, representation.br].filter((variant): variant is Variant => variant !== null);
}

/**
 * Gives every body of `content` an ArrayBuffer of its own (small Buffers share Node's pool) and
 * lists them with the search index tables, so posting the content moves the bytes instead of copying.
 */
export function detachBodies(content: SnapshotContent): ArrayBuffer[] {
  const buffers: ArrayBuffer[] = [];
  for (const name of REPRESENTATION_NAMES) {
    for (const variant of variantsOf(content.representations[name])) {
      const { body } = variant;
      let owned = body.buffer;
      if (body.byteOffset !== 0 || body.byteLength !== owned.byteLength || !(owned instanceof ArrayBuffer)) {
        const copy = new Uint8Array(body.byteLength);
        copy.set(body);
        owned = copy.buffer;
        // The content is this thread's own, about to be posted: swapping in the copy is safe.
        (variant as { body: Buffer }).body = Buffer.from(owned);
      }
      buffers.push(owned as ArrayBuffer);
    }
  }
  const { text, exactRating, atLeastRating, technicians, services } = content.searchIndex;
  const tables = [text.bitsetSlot, text.listStart, text.lists, text.bitsets, ...[...exactRating, ...atLeastRating, ...technicians.values(), ...services.values()].flatMap((f) => [f.positions, f.member])];
  for (const table of tables) buffers.push(table.buffer as ArrayBuffer);
  return buffers;
}

export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Structured clone turns Buffers into plain Uint8Arrays: wrap them again (no copy). */
export function reviveBodies(content: SnapshotContent): SnapshotContent {
  const representations = Object.fromEntries(
    REPRESENTATION_NAMES.map((name) => {
      const r = content.representations[name];
      const revive = (variant: Variant | null): Variant | null => variant && { ...variant, body: asBuffer(variant.body) };
      return [name, { ...r, identity: revive(r.identity)!, gzip: revive(r.gzip), br: revive(r.br) }];
    }),
  ) as unknown as SnapshotRepresentations;
  return { ...content, representations };
}
