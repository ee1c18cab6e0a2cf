import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendPreflight, setCorsHeaders, type Logger, type RequestHandler } from '@reviews/runtime';
import { ipLiteral, isPublicAddress } from './address-policy.js';
import { decodeUtf8Form } from './form-body.js';
import { parseHubRequest, type HubRequest, type HubRequestPolicy } from './hub-request.js';
import type { HubMetrics } from './metrics.js';
import type { RateDecision } from './rate-limit.js';

/** Form bodies of real subscription requests are a few hundred bytes. */
const MAX_BODY_BYTES = 16 * 1024;
const OVERLOAD_RETRY_AFTER_SECONDS = 30;
/** RFC 9110 §9.3.7, §15.5.6: what OPTIONS answers and every 405 lists. */
const HUB_METHODS = 'POST, OPTIONS';

export interface HubEndpointDeps {
  readonly policy: HubRequestPolicy;
  readonly metrics: HubMetrics;
  readonly logger: Logger;
  readonly limitClient: (ip: string) => RateDecision;
  readonly limitCallbackHost: (host: string) => RateDecision;
  /** False when this replica already has its maximum of verifications in flight. */
  readonly canAcceptVerification: () => boolean;
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
      deps.logger.error({ err: error }, 'hub request failed');
      if (!res.headersSent) text(res, 500, 'The hub could not process the request.');
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
    return text(res, 405, `${req.method} is not allowed here; subscribe or unsubscribe with a form-encoded POST.`);
  }
  const client = deps.limitClient(clientAddress(req));
  if (!client.allowed) {
    metrics.requests.inc({ mode: 'none', outcome: 'rate_limited' });
    res.setHeader('Retry-After', String(client.retryAfterSeconds));
    return text(res, 429, 'Too many hub requests from this client; retry later.');
  }
  if (!isFormEncoded(req.headers['content-type'])) {
    metrics.requests.inc({ mode: 'none', outcome: 'unsupported_media_type' });
    return text(res, 415, 'The body must be application/x-www-form-urlencoded (UTF-8).');
  }
  const body = await readBody(req);
  if (body === null) {
    metrics.requests.inc({ mode: 'none', outcome: 'rejected' });
    return text(res, 413, `The body must be at most ${MAX_BODY_BYTES} bytes.`);
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
  const host = deps.limitCallbackHost(request.callbackHost);
  if (!host.allowed) {
    metrics.requests.inc({ mode: request.mode, outcome: 'rate_limited' });
    res.setHeader('Retry-After', String(host.retryAfterSeconds));
    return text(res, 429, 'Too many hub requests for this callback host; retry later.');
  }
  if (!deps.canAcceptVerification()) {
    metrics.requests.inc({ mode: request.mode, outcome: 'overloaded' });
    res.setHeader('Retry-After', String(OVERLOAD_RETRY_AFTER_SECONDS));
    return text(res, 503, 'The hub has too many verifications in progress; retry later.');
  }
  metrics.requests.inc({ mode: request.mode, outcome: 'accepted' });
  deps.accept(request, Date.now());
  text(res, 202, `Accepted: the hub will verify this ${request.mode} request with a GET to the callback.`);
}

/** Every answer carries the CORS headers: a page the preflight cleared must be able to read it. */
function text(res: ServerResponse, status: number, message: string): void {
  const body = Buffer.from(`${message}\n`, 'utf8');
  res.statusCode = status;
  setCorsHeaders(res);
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

/**
 * The address rate limits apply to. A direct public client is its socket address (X-Forwarded-For
 * would let it pick any identity); behind a private proxy (the ingress) it is the last
 * X-Forwarded-For entry, the one that proxy appended.
 */
function clientAddress(req: IncomingMessage): string {
  const peer = req.socket.remoteAddress ?? 'unknown';
  const forwarded = req.headers['x-forwarded-for'];
  const literal = ipLiteral(peer);
  if (typeof forwarded !== 'string' || (literal !== null && isPublicAddress(literal))) return peer;
  const last = forwarded.split(',').at(-1)?.trim();
  return last && ipLiteral(last) !== null ? last : peer;
}

function isFormEncoded(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const [mediaType, ...params] = contentType.split(';').map((p) => p.trim().toLowerCase());
  if (mediaType !== 'application/x-www-form-urlencoded') return false;
  const charset = params.find((p) => p.startsWith('charset='))?.slice('charset='.length).replace(/"/g, '');
  return charset === undefined || charset === 'utf-8';
}

async function readBody(req: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
