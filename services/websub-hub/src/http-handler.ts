import type { IncomingMessage, ServerResponse } from 'node:http';
import { HUB_FULL_RETRY_AFTER_SECONDS, MAX_HUB_BODY_BYTES } from '@reviews/domain';
import { closeAfterLingering, requesterKey, sendPreflight, setCorsHeaders, type Logger, type RateDecision, type RequestHandler } from '@reviews/runtime';
import { decodeUtf8Form } from './form-body.js';
import { parseHubRequest, type HubRequest, type HubRequestPolicy } from './hub-request.js';
import type { HubMetrics } from './metrics.js';

/** How far past MAX_HUB_BODY_BYTES a declared body is still read (and dropped) to keep its connection. */
const DRAIN_ALLOWANCE_BYTES = 1024 * 1024;
const OVERLOAD_RETRY_AFTER_SECONDS = 30;
/** The hub retries opening its state in NATS every few seconds. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;
/** RFC 9110 §9.3.7, §15.5.6: what OPTIONS answers and every 405 lists. */
const HUB_METHODS = 'POST, OPTIONS';

export interface HubEndpointDeps {
  readonly policy: HubRequestPolicy;
  readonly metrics: HubMetrics;
  readonly logger: Logger;
  /** WEBSUB_TRUSTED_PROXY_HOPS: proxies in front of the hub whose X-Forwarded-For entries are believed. */
  readonly trustedProxyHops: number;
  /** Keyed by clientKey: the address, or an IPv6 client's /64. */
  readonly limitClient: (client: string) => RateDecision;
  /** Keyed by the client (as limitClient) and callbackHostKey (the host without its port). */
  readonly limitCallbackHost: (client: string, host: string) => RateDecision;
  /** False when this replica already has its maximum of verifications in flight. */
  readonly canAcceptVerification: () => boolean;
  /** Why the subscription store cannot be reached now (NATS disconnected), or null: a 202 would promise a verification that cannot happen. */
  readonly storeUnavailable: () => string | null;
  /**
   * Whether the hub has room for the subscription a subscribe request asks for: always for one it holds
   * already (a renewal), for a new one only below WEBSUB_MAX_SUBSCRIPTIONS. Null: room; else the refusal.
   */
  readonly roomFor: (request: HubRequest) => Promise<string | null>;
  /** Start the asynchronous verification of an accepted request. */
  readonly accept: (request: HubRequest, requestedAt: number) => void;
}

/**
 * `POST /api/websub/hub` (routed to by exact path): validates synchronously, answers 202 and
 * verifies later. Every refusal is a 4xx/5xx with a plain-text reason and never contacts the callback.
 * `OPTIONS` gets the CORS preflight every service answers; other methods 405.
 */
export function createHubHandler(deps: HubEndpointDeps): RequestHandler {
  return (req, res) => {
    handle(req, res, deps).catch((error: unknown) => {
      if (error instanceof BodyCutOff) {
        // The client went away, or node:http's request timeout ended the request (and answered 408
        // itself): nothing the hub did wrong, and the connection is gone or closing.
        deps.logger.debug({ code: error.code }, 'hub request ended before its body arrived');
        return;
      }
      deps.logger.error({ err: error }, 'hub request failed');
      if (!res.headersSent && !res.destroyed) text(res, 500, 'The hub could not process the request.');
      else res.destroy();
    });
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, deps: HubEndpointDeps): Promise<void> {
  const { metrics } = deps;
  // A preflight, like the other services' (not a subscription request, so not in websub_requests_total).
  if (req.method === 'OPTIONS') return sendPreflight(req, res, HUB_METHODS);
  if (req.method !== 'POST') {
    metrics.requests.inc({ mode: 'none', outcome: 'method_not_allowed' });
    res.setHeader('Allow', HUB_METHODS);
    // The same text whatever the method: a HEAD's headers (Content-Length) must be a GET's.
    return text(res, 405, 'Only POST is served here: subscribe or unsubscribe with a form-encoded POST.');
  }
  const requester = requesterKey(req, deps.trustedProxyHops);
  const client = deps.limitClient(requester);
  if (!client.allowed) {
    metrics.requests.inc({ mode: 'none', outcome: 'rate_limited' });
    res.setHeader('Retry-After', String(client.retryAfterSeconds));
    return text(res, 429, 'Too many hub requests from this client; retry later.');
  }
  if (!isFormEncoded(req.headers['content-type'])) {
    metrics.requests.inc({ mode: 'none', outcome: 'unsupported_media_type' });
    return text(res, 415, 'The body must be application/x-www-form-urlencoded (UTF-8).');
  }
  const coding = contentCoding(req.headers['content-encoding']);
  if (coding !== null) {
    metrics.requests.inc({ mode: 'none', outcome: 'unsupported_media_type' });
    // RFC 9110 §15.5.16: a 415 for a content coding says which codings would do.
    res.setHeader('Accept-Encoding', 'identity');
    return text(res, 415, `The body must not be content-coded (Content-Encoding: ${coding}); send the form uncompressed.`);
  }
  // A declared length over the limit is refused before any of the body is read: waiting for the first
  // bytes past the limit held the 413 back from a client that sends slowly, or waits for an answer first.
  // NaN without a Content-Length (a chunked body): neither comparison holds.
  const declaredLength = Number(req.headers['content-length']);
  const body = declaredLength > MAX_HUB_BODY_BYTES ? null : await readBody(req);
  if (body === null) {
    metrics.requests.inc({ mode: 'none', outcome: 'rejected' });
    // A body declared within the allowance is read to its end and dropped, so the connection carries
    // the next request. Any other closes the connection after the 413, read for a bounded moment so a
    // client still sending reads the 413 rather than a reset (draining whatever came kept the hub
    // reading a declared terabyte for up to a minute, and answered a body cut off mid-way a second time).
    if (!(declaredLength <= MAX_HUB_BODY_BYTES + DRAIN_ALLOWANCE_BYTES)) closeAfterLingering(req, res);
    return text(res, 413, `The body must be at most ${MAX_HUB_BODY_BYTES} bytes.`);
  }
  const decoded = decodeUtf8Form(body);
  if (!decoded.ok) {
    metrics.requests.inc({ mode: 'none', outcome: 'rejected' });
    return text(res, 400, decoded.message);
  }
  const parsed = parseHubRequest(decoded.form, deps.policy);
  if (!parsed.ok) {
    metrics.requests.inc({ mode: parsed.mode, outcome: 'rejected' });
    return text(res, 400, parsed.message);
  }
  const { request } = parsed;
  const host = deps.limitCallbackHost(requester, request.callbackHostKey);
  if (!host.allowed) {
    metrics.requests.inc({ mode: request.mode, outcome: 'rate_limited' });
    res.setHeader('Retry-After', String(host.retryAfterSeconds));
    return text(res, 429, 'Too many hub requests for this callback host; retry later.');
  }
  const unavailable = deps.storeUnavailable();
  if (unavailable !== null) {
    metrics.requests.inc({ mode: request.mode, outcome: 'unavailable' });
    res.setHeader('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
    return text(res, 503, `The hub cannot reach its subscription store: ${unavailable}. Retry later.`);
  }
  let full: string | null;
  try {
    full = request.mode === 'subscribe' ? await deps.roomFor(request) : null;
  } catch (error) {
    // At debug: this path is taken for every request while the store hangs (websub_requests_total counts them).
    deps.logger.debug({ err: error }, 'counting subscriptions failed; subscription request refused with 503');
    metrics.requests.inc({ mode: request.mode, outcome: 'unavailable' });
    res.setHeader('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
    return text(res, 503, 'The hub cannot reach its subscription store. Retry later.');
  }
  if (full !== null) {
    metrics.requests.inc({ mode: request.mode, outcome: 'full' });
    res.setHeader('Retry-After', String(HUB_FULL_RETRY_AFTER_SECONDS));
    return text(res, 503, full);
  }
  // After the count, which requests may wait for together: each is one more verification once accepted.
  if (!deps.canAcceptVerification()) {
    metrics.requests.inc({ mode: request.mode, outcome: 'overloaded' });
    res.setHeader('Retry-After', String(OVERLOAD_RETRY_AFTER_SECONDS));
    return text(res, 503, 'The hub has too many verifications in progress; retry later.');
  }
  metrics.requests.inc({ mode: request.mode, outcome: 'accepted' });
  deps.accept(request, Date.now());
  text(res, 202, `Accepted: the hub will verify this ${request.mode} request with a GET to the callback.`);
}

/**
 * `/api/websub/hub` while the hub cannot work yet (its state in NATS not opened): the preflight as
 * always, and 503 with Retry-After for any request, saying why.
 */
export function createUnavailableHubHandler(reason: () => string, metrics: HubMetrics): RequestHandler {
  return (req, res) => {
    if (req.method === 'OPTIONS') return sendPreflight(req, res, HUB_METHODS);
    metrics.requests.inc({ mode: 'none', outcome: 'unavailable' });
    res.setHeader('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
    text(res, 503, `The hub is not accepting requests yet: ${reason()}. Retry later.`);
  };
}

/**
 * Every answer carries the CORS headers: a page the preflight cleared must be able to read it. None is
 * for a cache: a shared one kept a GET's 405, cacheable by default (RFC 9110 §15.5.6).
 */
function text(res: ServerResponse, status: number, message: string): void {
  const body = Buffer.from(`${message}\n`, 'utf8');
  res.statusCode = status;
  setCorsHeaders(res);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

function isFormEncoded(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const [mediaType, ...params] = contentType.split(';').map((p) => p.trim().toLowerCase());
  if (mediaType !== 'application/x-www-form-urlencoded') return false;
  const charset = params.find((p) => p.startsWith('charset='))?.slice('charset='.length).replace(/"/g, '');
  return charset === undefined || charset === 'utf-8';
}

/**
 * The codings other than identity a Content-Encoding header names, or null. The hub decodes none (a
 * form is a few hundred bytes): a coded body would otherwise be refused as not UTF-8 or as missing
 * its fields, or, sent with the coding name only, accepted although the client meant something else.
 */
function contentCoding(header: string | undefined): string | null {
  const codings = (header ?? '').split(',').map((c) => c.trim()).filter((c) => c !== '' && c.toLowerCase() !== 'identity');
  return codings.length === 0 ? null : codings.join(', ');
}

/** Reading the body failed: the connection closed before all of it arrived. */
class BodyCutOff extends Error {
  constructor(readonly code: string | undefined) {
    super('the request body was cut off');
  }
}

/**
 * The body, or null as soon as it exceeds MAX_HUB_BODY_BYTES; rejects with BodyCutOff when the connection
 * ends first. Past the limit what still arrives is dropped (see DRAIN_ALLOWANCE_BYTES): leaving it
 * unread stalled the connection's next request into a 408.
 */
function readBody(req: IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      outcome();
    };
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > MAX_HUB_BODY_BYTES) settle(() => resolve(null));
      else chunks.push(chunk);
    });
    req.once('end', () => settle(() => resolve(Buffer.concat(chunks))));
    req.once('error', (error: NodeJS.ErrnoException) => settle(() => reject(new BodyCutOff(error.code))));
    req.once('close', () => settle(() => reject(new BodyCutOff(req.errored ? (req.errored as NodeJS.ErrnoException).code : 'ECONNRESET'))));
  });
}
