import { buildReviewsDocument } from './derive/reviews-document.js';
import { deriveInsights } from './derive/insights.js';
import { publishedPart } from './derive/published-part.js';
import { validateDataset, type ValidationResult } from './validate.js';
import { renderAtomFeed, renderJsonFeed } from './render/feeds.js';
import { buildOpenApiDocument } from './render/openapi.js';
import { contentHash, createRepresentation, representationHash, withBrotli, type Compress, type LastModified, type Representation } from './representation.js';
import { buildSearchIndex, createSearchEngine, type SearchEngine, type SearchIndexData } from './search/engine.js';
import type { InsightsDocument, ReviewsDocument } from './schemas/documents.js';
import type { DatasetInput } from './schemas/input.js';
import { publicUrls, type PublicUrls, type TopicName } from './urls.js';

export const JSON_CONTENT_TYPE = 'application/json';
export const ATOM_CONTENT_TYPE = 'application/atom+xml';

export interface SnapshotRepresentations {
  readonly reviews: Representation;
  readonly insights: Representation;
  readonly feedJson: Representation;
  readonly feedAtom: Representation;
  readonly openapi: Representation;
}

/** Everything one dataset version serves, built once and then only read. */
export interface Snapshot {
  /** Content hash of the published input: identical content, identical version. */
  readonly version: string;
  readonly publishedAt: Date;
  readonly urls: PublicUrls;
  /** The dataset as published, unverified reviews included; the documents hold its publishedPart. */
  readonly input: DatasetInput;
  readonly reviewsDocument: ReviewsDocument;
  readonly insightsDocument: InsightsDocument;
  readonly search: SearchEngine;
  readonly representations: SnapshotRepresentations;
  topic(name: TopicName): Representation;
}

export interface SnapshotOptions {
  readonly baseUrl: string;
  readonly publishedAt: Date;
  /** The representations' Last-Modified when the version replaces another (lastModifiedAfter); otherwise the publish time. */
  readonly lastModified?: LastModified;
  /** How bodies are compressed; a build worker passes a memo so unchanged bodies are not compressed again. */
  readonly compress?: Compress;
  /**
   * The version, when the caller has it already: a source that checked the published bytes' SHA-256
   * has it (`versionOfSha256`), which saves serialising the whole input again to hash it.
   */
  readonly version?: string;
}

/** Canonical bytes of a published input; its hash is the dataset version. */
export function canonicalDatasetBytes(input: DatasetInput): Buffer {
  return Buffer.from(JSON.stringify(input), 'utf8');
}

/**
 * The version of an input: the hash of its canonical bytes, taken from their text (hashed as UTF-8,
 * the same digest) so no Buffer as large as the dataset is made and left for the collector.
 */
export function datasetVersion(input: DatasetInput): string {
  return canonicalBytesVersion(JSON.stringify(input));
}

/** The version of the input whose canonical bytes (or their text) these are: a publisher holding the bytes need not serialise the input again. */
export function canonicalBytesVersion(canonical: Buffer | string): string {
  return contentHash(canonical);
}

/** The same version from the bytes' SHA-256 digest in hex (as the NATS pointer records it): no second hash. */
export function versionOfSha256(sha256Hex: string): string {
  return Buffer.from(sha256Hex, 'hex').toString('base64url').slice(0, 32);
}

/**
 * The data of a snapshot: plain objects and bytes, nothing callable, so it can be built on a worker
 * thread and posted (structured clone) to the thread that serves it.
 */
export type SnapshotContent = Omit<Snapshot, 'search' | 'topic'> & { readonly searchIndex: SearchIndexData };

/** The expensive part of a build: derivation, rendering and compression. */
export function buildSnapshotContent(input: DatasetInput, options: SnapshotOptions): SnapshotContent {
  // First, while little else is alive: serialising the input takes about twice its size for a
  // moment (~200 MiB at 100,000 reviews), which on top of the bodies made the peak of a build.
  const version = options.version ?? datasetVersion(input);
  const urls = publicUrls(options.baseUrl);
  const published = publishedPart(input);
  const reviewsDocument = buildReviewsDocument(published);
  const insightsDocument = deriveInsights(published);
  const lastModified = options.lastModified ?? { at: options.publishedAt, shared: false };
  const represent = (body: string, contentType: string) => createRepresentation(body, contentType, lastModified, options.compress);
  const json = (value: unknown) => represent(JSON.stringify(value), JSON_CONTENT_TYPE);
  const representations: SnapshotRepresentations = {
    reviews: json(reviewsDocument),
    insights: json(insightsDocument),
    feedJson: represent(renderJsonFeed(reviewsDocument, urls), JSON_CONTENT_TYPE),
    feedAtom: represent(renderAtomFeed(reviewsDocument, urls), ATOM_CONTENT_TYPE),
    openapi: json(buildOpenApiDocument(urls)),
  };
  const searchIndex = buildSearchIndex(reviewsDocument.reviews, input.business, insightsDocument);
  return { version, publishedAt: options.publishedAt, urls, input, reviewsDocument, insightsDocument, representations, searchIndex };
}

/** A servable snapshot from its content: wraps the prebuilt search indexes in an engine. */
export function assembleSnapshot({ searchIndex, ...content }: SnapshotContent): Snapshot {
  const { input, reviewsDocument, insightsDocument, representations } = content;
  const search = createSearchEngine(input, reviewsDocument.reviews, input.business, insightsDocument, searchIndex);
  return { ...content, search, topic: (name) => representations[name] };
}

/**
 * The same version with the brotli variants its build left for later (by content hash, see
 * `Compress`): a new snapshot sharing everything else, so requests see it with or without them.
 */
export function withLateBrotli(snapshot: Snapshot, brotliByHash: ReadonlyMap<string, Buffer>): Snapshot {
  const complete = (representation: Representation): Representation => {
    const br = representation.br === null ? brotliByHash.get(representationHash(representation)) : undefined;
    return br ? withBrotli(representation, br) : representation;
  };
  const { reviews, insights, feedJson, feedAtom, openapi } = snapshot.representations;
  const representations: SnapshotRepresentations = { reviews: complete(reviews), insights: complete(insights), feedJson: complete(feedJson), feedAtom: complete(feedAtom), openapi: complete(openapi) };
  return { ...snapshot, representations, topic: (name) => representations[name] };
}

/**
 * A new version's representations, each whose bytes equal the one served (same identity ETag) kept
 * as the served one: its Last-Modified stays the time its bytes last changed (RFC 9110 §8.8.2), so
 * If-Modified-Since revalidates it to 304 across versions that did not change it. The kept object
 * also keeps its brotli variant; when it has none (its version's late brotli never came) and the
 * new build made one, it gets that one. `withLateBrotli` only adds missing variants, so it never
 * replaces a kept representation by a variant-less one.
 */
export function keepUnchangedRepresentations(next: SnapshotRepresentations, served: SnapshotRepresentations | null): SnapshotRepresentations {
  if (served === null) return next;
  const keep = (fresh: Representation, old: Representation): Representation => {
    if (fresh.identity.etag !== old.identity.etag) return fresh;
    return old.br === null && fresh.br !== null ? { ...old, br: fresh.br } : old;
  };
  return {
    reviews: keep(next.reviews, served.reviews),
    insights: keep(next.insights, served.insights),
    feedJson: keep(next.feedJson, served.feedJson),
    feedAtom: keep(next.feedAtom, served.feedAtom),
    openapi: keep(next.openapi, served.openapi),
  };
}

/** The latest Last-Modified (ms) among a snapshot's representations: what a new version must be dated after. */
export function latestLastModifiedMs(representations: SnapshotRepresentations): number {
  const { reviews, insights, feedJson, feedAtom, openapi } = representations;
  return Math.max(reviews.lastModifiedMs, insights.lastModifiedMs, feedJson.lastModifiedMs, feedAtom.lastModifiedMs, openapi.lastModifiedMs);
}

export function buildSnapshotFromInput(input: DatasetInput, options: SnapshotOptions): Snapshot {
  return assembleSnapshot(buildSnapshotContent(input, options));
}

export type SnapshotResult = { ok: true; snapshot: Snapshot } | Extract<ValidationResult, { ok: false }>;

/** Validate untrusted input (file contents, an object from the store) and build its snapshot. */
export function buildSnapshot(raw: unknown, options: SnapshotOptions): SnapshotResult {
  const validated = validateDataset(raw);
  if (!validated.ok) return validated;
  return { ok: true, snapshot: buildSnapshotFromInput(validated.input, options) };
}
