import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { trace, type Span } from '@opentelemetry/api';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { recordingRequestSpan, requestSpan } from './trace-requests.js';

/** Route label for paths that match no route: keeps label cardinality bounded. */
export const UNMATCHED_ROUTE = 'unmatched';

type Histogram = Metrics['httpDuration'];

/** The histogram children of one (service, method, route), bound once per status code. */
class RouteSeries {
  readonly #byStatus = new Map<number, (seconds: number) => void>();
  /** The request span's name: `GET /api/reviews/since/:date`. */
  readonly spanName: string;

  constructor(
    private readonly histogram: Histogram,
    readonly labels: readonly [service: string, method: string, route: string],
  ) {
    this.spanName = `${labels[1]} ${labels[2]}`;
  }

  observe(status: number, seconds: number): void {
    let observe = this.#byStatus.get(status);
    if (observe === undefined) {
      observe = this.histogram.labels(...this.labels, String(status)).observe;
      this.#byStatus.set(status, observe);
    }
    observe(seconds);
  }
}

/**
 * The methods of RFC 9110 and PATCH keep their name in the `method` label; the other methods node:http accepts
 * (PROPFIND, MKCOL, …, 25 of them) are answered alike and share `_OTHER`, as OpenTelemetry's semantic
 * conventions name a method outside that set: one scanner trying them all grew a pod's request series twelvefold.
 */
const NAMED_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);
const OTHER_METHOD = '_OTHER';

/**
 * histogram -> service -> method -> route, so a request finds its series by lookups on strings it
 * already has, without building a labels object or a key. Every level is bounded: services and
 * routes are templates, and methods NAMED_METHODS or `_OTHER`.
 */
const seriesByHistogram = new WeakMap<Histogram, Map<string, Map<string, Map<string, RouteSeries>>>>();

function seriesOf(histogram: Histogram, service: string, method: string, route: string): RouteSeries {
  let byService = seriesByHistogram.get(histogram);
  if (!byService) seriesByHistogram.set(histogram, (byService = new Map()));
  let byMethod = byService.get(service);
  if (!byMethod) byService.set(service, (byMethod = new Map()));
  let byRoute = byMethod.get(method);
  if (!byRoute) byMethod.set(method, (byRoute = new Map()));
  let series = byRoute.get(route);
  if (!series) byRoute.set(route, (series = new RouteSeries(histogram, [service, method, route])));
  return series;
}

const STARTED = Symbol('observeStarted');
const SERIES = Symbol('observeSeries');
const LOGGER = Symbol('observeLogger');

interface Observed extends ServerResponse {
  [STARTED]: number;
  [SERIES]: RouteSeries | null;
  /** Set only while info is enabled: above it, nothing for the log line is built. */
  [LOGGER]: Logger | null;
}

/**
 * Request lines carry only the fixed fields below, never a secret, so they skip the redaction pass
 * every other line goes through (it costs more than the rest of the line). One child per logger.
 */
const requestLoggers = new WeakMap<Logger, Logger>();

function requestLogger(logger: Logger): Logger {
  let child = requestLoggers.get(logger);
  if (child === undefined) requestLoggers.set(logger, (child = logger.child({}, { redact: [] })));
  return child;
}

function logRequest(logger: Logger, span: Span | undefined, [, method, route]: RouteSeries['labels'], status: number, seconds: number): void {
  const ids = span?.spanContext();
  if (ids && trace.isSpanContextValid(ids)) logger.info({ method, route, status, duration_ms: seconds * 1000, trace_id: ids.traceId, span_id: ids.spanId }, 'request');
  else logger.info({ method, route, status, duration_ms: seconds * 1000 }, 'request');
}

/**
 * The status of a response the client did not wait for (the connection closed before it was sent):
 * nginx's "client closed request", so an aborted request is neither counted as the 200 that
 * `statusCode` still holds nor as a server error.
 */
export const CLIENT_CLOSED_REQUEST = 499;

/** One shared listener for `finish` and `close` (no closure per request); the first one records. */
function record(this: Observed): void {
  const series = this[SERIES];
  if (series === null) return;
  this[SERIES] = null;
  const now = performance.now();
  const seconds = (now - this[STARTED]) / 1000;
  const status = this.writableFinished ? this.statusCode : CLIENT_CLOSED_REQUEST;
  series.observe(status, seconds);
  const logger = this[LOGGER];
  if (logger !== null) logRequest(logger, requestSpan(this), series.labels, status, seconds);
  const span = recordingRequestSpan(this);
  if (span !== undefined) {
    // The attribute is the status sent (OpenTelemetry HTTP conventions): none when the client left first.
    if (status !== CLIENT_CLOSED_REQUEST) span.setAttribute('http.response.status_code', status);
    // The clock read the histogram took: the span ends at the same instant, without a second read.
    span.end(now);
  }
}

/**
 * Records `http_request_duration_seconds` and logs one `request` line at info (method, route,
 * status, duration_ms, and trace_id/span_id when a span is active) when the response finishes (or
 * the client goes away). `route` is a template such as `/api/reviews/since/:date`, never the raw
 * path. Above info, nothing for the log line is built. With tracing on it also names the request's
 * SERVER span after the route and ends it there, so a request costs one pair of listeners.
 */
export function observeRequest(metrics: Metrics, service: string, req: IncomingMessage, res: ServerResponse, route: string, logger: Logger): void {
  const observed = res as Observed;
  const method = req.method ?? 'UNKNOWN';
  observed[STARTED] = performance.now();
  const series = seriesOf(metrics.httpDuration, service, NAMED_METHODS.has(method) ? method : OTHER_METHOD, route);
  observed[SERIES] = series;
  observed[LOGGER] = logger.isLevelEnabled('info') ? requestLogger(logger) : null;
  const span = recordingRequestSpan(res);
  // The request's SERVER span (traceRequests) is named after the route template, never the raw path,
  // and ends with the response (record).
  if (span !== undefined) {
    span.updateName(series.spanName);
    span.setAttribute('http.request.method', method);
    span.setAttribute('http.route', route);
  }
  res.on('finish', record);
  res.on('close', record);
}
