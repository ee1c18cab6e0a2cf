import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { groupQueryString, parseSearchQuery, PATHS, parseSinceDate, searchQueryString, topicLinkHeader, unexpectedParameters, type Issue, type Representation, type Snapshot, type TopicName } from '@reviews/domain';
import type { SnapshotFollower } from '@reviews/dataset-store';
import {
  inRequestSpan,
  negotiableAcceptEncoding,
  observeRequest,
  READ_METHODS,
  sendError,
  sendMethodNotAllowed,
  sendNotFound,
  sendPreflight,
  sendRepresentation,
  pathOf,
  splitTarget,
  UNMATCHED_ROUTE,
  withSyncSpan,
  type Logger,
  type Metrics,
  type RequestHandler,
  type SendOptions,
} from '@reviews/runtime';
import { normalizedKey, QueryCache } from './queries.js';
import { createQueryRepresentation } from './query-representation.js';
import { createSinceRepresentation } from './since-representation.js';

export const SERVICE = 'read-api';

export interface ReadApiDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly snapshots: Pick<SnapshotFollower, 'current'>;
}

interface DocumentRoute {
  readonly representation: (snapshot: Snapshot) => Representation;
  /** WebSub topics advertise their hub in a Link header. */
  readonly topic?: TopicName;
}

/** Precomputed documents, answered on the node:http fast path. */
const DOCUMENTS = new Map<string, DocumentRoute>([
  [PATHS.reviews, { representation: (s) => s.representations.reviews, topic: 'reviews' }],
  [PATHS.insights, { representation: (s) => s.representations.insights }],
  [PATHS.feedJson, { representation: (s) => s.representations.feedJson, topic: 'feedJson' }],
  [PATHS.feedAtom, { representation: (s) => s.representations.feedAtom, topic: 'feedAtom' }],
  [PATHS.openapi, { representation: (s) => s.representations.openapi }],
]);

const SEARCH_ROUTE = PATHS.search;
const SINCE_PREFIX = PATHS.sincePrefix;
const SINCE_ROUTE = `${PATHS.sincePrefix}:date`;

/** Route template of a path (the metrics label), or null when no route serves it. */
function routeOf(path: string): string | null {
  if (DOCUMENTS.has(path) || path === SEARCH_ROUTE) return path;
  if (path.startsWith(SINCE_PREFIX) && path.length > SINCE_PREFIX.length && !path.includes('/', SINCE_PREFIX.length)) return SINCE_ROUTE;
  return null;
}

/** Send options with the topic's Link header, built once per dataset version instead of per request. */
const topicOptionsBySnapshot = new WeakMap<Snapshot, Map<TopicName, SendOptions>>();

function topicSendOptions(snapshot: Snapshot, topic: TopicName): SendOptions {
  let byTopic = topicOptionsBySnapshot.get(snapshot);
  if (!byTopic) topicOptionsBySnapshot.set(snapshot, (byTopic = new Map()));
  let options = byTopic.get(topic);
  if (!options) byTopic.set(topic, (options = { link: topicLinkHeader(snapshot.urls, topic) }));
  return options;
}

function sendNotReady(res: ServerResponse): void {
  sendError(res, 503, 'not_ready', 'No dataset is loaded yet; try again shortly.', { headers: { 'Retry-After': '5' } });
}

/**
 * The `Link` of a search page that has a next one (RFC 8288 rel="next"), so generic HTTP clients page on their
 * own. Keyed by the result's identity variant, which every copy of its representation with more variants shares.
 */
const nextPages = new WeakMap<object, SendOptions>();

/**
 * GET /api/reviews/search, on node:http like the documents (it has no path parameters for express
 * to decode): parameter parsing, then the result memoized per snapshot.
 */
function answerSearch(snapshot: Snapshot, req: IncomingMessage, res: ServerResponse, cache: QueryCache): void {
  const parsed = parseSearchQuery(groupQueryString(splitTarget(req.url).query));
  if (!parsed.ok) {
    sendError(res, 400, 'invalid_query', 'Invalid search parameters.', { issues: parsed.issues });
    return;
  }
  const { params } = parsed;
  const representation = withSyncSpan('reviews search', { attributes: { 'http.route': SEARCH_ROUTE, 'dataset.version': snapshot.version } }, () =>
    cache.get(snapshot, normalizedKey('search', params), negotiableAcceptEncoding(req), () => {
      const result = snapshot.search.search(params);
      const built = createQueryRepresentation(result, snapshot);
      if (result.next_cursor !== null) nextPages.set(built.identity, { link: `<${snapshot.urls.base}${SEARCH_ROUTE}?${searchQueryString({ ...params, cursor: result.next_cursor })}>; rel="next"` });
      return built;
    }),
  );
  sendRepresentation(req, res, representation, nextPages.get(representation.identity));
}

const INVALID_DATE = 'The date must be a real calendar date in the form YYYY-MM-DD.';
const NO_PARAMETERS = 'This endpoint takes no query parameters; the date goes in the path.';

/** The query parameters a since request was sent, each an issue: the endpoint takes none. */
function sinceParameterIssues(req: Request): Issue[] {
  return unexpectedParameters(groupQueryString(splitTarget(req.url).query));
}

/** The 400 of a since request, listing every problem: the date's `dateIssues`, then each query parameter it was sent (`unexpected`). */
function refuseSince(res: Response, dateIssues: readonly Issue[], unexpected: readonly Issue[]): void {
  const issues = [...dateIssues, ...unexpected];
  if (dateIssues.length === 0) sendError(res, 400, 'invalid_query', NO_PARAMETERS, { issues });
  else sendError(res, 400, 'invalid_date', unexpected.length === 0 ? INVALID_DATE : `${INVALID_DATE} ${NO_PARAMETERS}`, { issues });
}

/** GET /api/reviews/since/:date: path parameter decoding and parsing, then memoized results. */
function createQueryApp({ logger, snapshots }: ReadApiDeps, cache: QueryCache): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', false);

  const withSnapshot = (handler: (snapshot: Snapshot, req: Request, res: Response) => void) => (req: Request, res: Response) => {
    const snapshot = snapshots.current();
    if (!snapshot) sendNotReady(res);
    else handler(snapshot, req, res);
  };

  app.get(
    SINCE_ROUTE,
    withSnapshot((snapshot, req, res) => {
      const parsed = parseSinceDate(String(req.params.date));
      // Refused rather than ignored, as search does: a client sending `?limit=5` must not think it was obeyed.
      const unexpected = sinceParameterIssues(req);
      if (!parsed.ok || unexpected.length > 0) return refuseSince(res, parsed.ok ? [] : parsed.issues, unexpected);
      const { date } = parsed;
      const representation = withSyncSpan('reviews since', { attributes: { 'http.route': SINCE_ROUTE, 'dataset.version': snapshot.version } }, () =>
        cache.get(snapshot, normalizedKey('since', { date }), negotiableAcceptEncoding(req), () => createSinceRepresentation(snapshot, date)),
      );
      sendRepresentation(req, res, representation);
    }),
  );

  app.use((_req: Request, res: Response) => sendNotFound(res));

  // Express 5 reports a path parameter whose percent-encoding is not UTF-8 (`%FF`, `%C0%AF`) as a
  // 400 error. :date is the only parameter, so it is named as the invalid date it is; other client
  // errors keep the envelope. Never an HTML page or a stack trace.
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const status = (error as { status?: unknown }).status;
    if (error instanceof URIError && status === 400) return refuseSince(res, [{ code: 'custom', path: ['date'], message: 'is not valid percent-encoded UTF-8' }], sinceParameterIssues(req));
    if (typeof status === 'number' && status >= 400 && status < 500) {
      sendError(res, status, 'bad_request', 'The request could not be understood.');
      return;
    }
    answerFailure(res, logger, error, splitTarget(req.originalUrl).path);
  });
  return app;
}

/** A request the read API failed on: logged, and answered 500 unless the response had begun (then cut short). */
function answerFailure(res: ServerResponse, logger: Logger, error: unknown, path: string): void {
  logger.error({ err: error, path }, 'request failed');
  if (!res.headersSent) sendError(res, 500, 'internal_error', 'The server failed to answer this request.');
  else res.destroy();
}

/**
 * The read API as a plain node:http handler. Dataset documents and search take the fast path (no
 * express); only /api/reviews/since/:date goes through express.
 */
export function createReadApi(deps: ReadApiDeps): RequestHandler {
  const { logger, metrics, snapshots } = deps;
  const cache = new QueryCache();
  const queries = createQueryApp(deps, cache);
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = pathOf(req.url);
    const route = routeOf(path);
    observeRequest(metrics, SERVICE, req, res, route ?? UNMATCHED_ROUTE, logger);
    if (route === null) {
      sendNotFound(res);
      return;
    }
    if (req.method === 'OPTIONS') {
      sendPreflight(req, res, READ_METHODS);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendMethodNotAllowed(res);
      return;
    }
    const snapshot = snapshots.current();
    if (!snapshot) {
      sendNotReady(res);
      return;
    }
    if (path === SEARCH_ROUTE) {
      try {
        inRequestSpan(res, () => answerSearch(snapshot, req, res, cache));
      } catch (error) {
        answerFailure(res, logger, error, path);
      }
      return;
    }
    const document = DOCUMENTS.get(path);
    if (!document) {
      inRequestSpan(res, () => queries(req, res));
      return;
    }
    const representation = document.representation(snapshot);
    sendRepresentation(req, res, representation, document.topic ? topicSendOptions(snapshot, document.topic) : undefined);
  };
}
