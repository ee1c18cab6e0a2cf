import { MAX_CALLBACK_AND_TOPIC_LENGTH, MAX_SECRET_BYTES, type TopicName } from '@reviews/domain';
import { decodeUnreservedEscapes, ipLiteral } from '@reviews/runtime';
import { isPublicAddress } from './address-policy.js';
import { callbackHostKey } from './callback-url.js';
import { isDnsName, isLocalhostName } from './host-name.js';
import type { TopicIndex } from './topic-index.js';


export type HubMode = 'subscribe' | 'unsubscribe';

export interface HubRequest {
  readonly mode: HubMode;
  readonly topic: TopicName;
  /** The hub's own URL of the topic, however the request spelled it: with the callback, it names the subscription. */
  readonly topicUrl: string;
  /** The topic URL as the request spelled it, which verification and denial send back (§5.3, §5.2). */
  readonly requestedTopicUrl: string;
  readonly callback: string;
  readonly callbackHost: string;
  /** The callback's host as the per-callback-host rate limit keys it (callbackHostKey). */
  readonly callbackHostKey: string;
  /** As requested (subscribe only); the hub clamps it. */
  readonly leaseSeconds: number | null;
  readonly secret: string | null;
}

export type ParsedHubRequest =
  | { readonly ok: true; readonly request: HubRequest }
  | { readonly ok: false; readonly mode: string; readonly field: string; readonly message: string };

export interface HubRequestPolicy {
  /** Exactly the topics this hub serves. */
  readonly topics: TopicIndex;
  readonly allowPrivateCallbacks: boolean;
}

/**
 * Validate a subscription request without touching the network: everything refused here is
 * answered synchronously with a 400 and never reaches the callback. Unknown parameters are ignored.
 */
export function parseHubRequest(form: URLSearchParams, policy: HubRequestPolicy): ParsedHubRequest {
  const single = (name: string): string | null | 'repeated' => {
    const values = form.getAll(name);
    if (values.length > 1) return 'repeated';
    return values[0] ?? null;
  };
  const modeValue = single('hub.mode');
  const refuse = (field: string, message: string): ParsedHubRequest => ({
    ok: false,
    mode: modeValue === 'subscribe' || modeValue === 'unsubscribe' || modeValue === 'publish' ? modeValue : 'invalid',
    field,
    message: `${field}: ${message}`,
  });

  if (modeValue === 'repeated') return refuse('hub.mode', 'given more than once');
  if (modeValue === null || modeValue === '') return refuse('hub.mode', 'is required (subscribe or unsubscribe)');
  if (modeValue === 'publish') return refuse('hub.mode', 'publish is not accepted: this hub publishes its own topics');
  if (modeValue !== 'subscribe' && modeValue !== 'unsubscribe') return refuse('hub.mode', 'must be subscribe or unsubscribe');
  const mode: HubMode = modeValue;

  const topicValue = single('hub.topic');
  if (topicValue === 'repeated') return refuse('hub.topic', 'given more than once');
  if (topicValue === null || topicValue === '') return refuse('hub.topic', 'is required');
  if (hasWhitespaceOrControl(topicValue)) return refuse('hub.topic', WHITESPACE_MESSAGE);
  // Stored and sent back as spelled, so bounded as the callback is: `/.` 7,950 times still names a topic, verified with a 32,000-character target.
  const topicLength = percentEncodedLength(topicValue);
  if (topicLength > MAX_CALLBACK_AND_TOPIC_LENGTH) return refuse('hub.topic', `must be at most ${MAX_CALLBACK_AND_TOPIC_LENGTH} characters once percent-encoded (each byte of a non-ASCII character counts as three; this one is ${topicLength})`);
  const match = policy.topics.find(topicValue);
  if (!match) return refuse('hub.topic', `is not a topic of this hub (topics: ${policy.topics.urls.join(', ')})`);
  const { topic, url: topicUrl } = match;
  const topicSyntax = writtenAuthority(topicValue, new URL(topicUrl).protocol);
  if (!topicSyntax.ok) return refuse('hub.topic', topicSyntax.message);

  const callbackValue = single('hub.callback');
  if (callbackValue === 'repeated') return refuse('hub.callback', 'given more than once');
  if (callbackValue === null || callbackValue === '') return refuse('hub.callback', 'is required');
  const callback = checkCallback(callbackValue, policy.allowPrivateCallbacks);
  if (!callback.ok) return refuse('hub.callback', callback.message);

  let leaseSeconds: number | null = null;
  if (mode === 'subscribe') {
    // §5.1: lease_seconds MUST be ignored on unsubscribe.
    const leaseValue = single('hub.lease_seconds');
    if (leaseValue === 'repeated') return refuse('hub.lease_seconds', 'given more than once');
    if (leaseValue !== null) {
      if (!/^[0-9]+$/.test(leaseValue) || /^0+$/.test(leaseValue)) return refuse('hub.lease_seconds', 'must be a positive integer');
      leaseSeconds = Math.min(Number(leaseValue), Number.MAX_SAFE_INTEGER);
    }
  }

  let secret: string | null = null;
  if (mode === 'subscribe') {
    const secretValue = single('hub.secret');
    if (secretValue === 'repeated') return refuse('hub.secret', 'given more than once');
    if (secretValue !== null) {
      if (secretValue === '') return refuse('hub.secret', 'must not be empty (omit it for unsigned notifications)');
      if (Buffer.byteLength(secretValue, 'utf8') > MAX_SECRET_BYTES) return refuse('hub.secret', 'must be less than 200 bytes');
      secret = secretValue;
    }
  }

  return { ok: true, request: { mode, topic, topicUrl, requestedTopicUrl: topicValue, callback: callback.url, callbackHost: callback.host, callbackHostKey: callback.hostKey, leaseSeconds, secret } };
}

type CallbackCheck = { ok: true; url: string; host: string; hostKey: string } | { ok: false; message: string };

function checkCallback(raw: string, allowPrivate: boolean): CallbackCheck {
  if (raw.length > MAX_CALLBACK_AND_TOPIC_LENGTH) return { ok: false, message: `must be at most ${MAX_CALLBACK_AND_TOPIC_LENGTH} characters` };
  if (hasWhitespaceOrControl(raw)) return { ok: false, message: WHITESPACE_MESSAGE };
  let url: URL;
  try {
    url = new URL(decodeUnreservedEscapes(raw));
  } catch {
    return { ok: false, message: 'must be an absolute URL' };
  }
  if (url.protocol !== 'https:') return { ok: false, message: 'must be an https: URL' };
  const written = writtenAuthority(raw, url.protocol);
  if (!written.ok) return written;
  if (written.authority.includes('@')) return { ok: false, message: 'must not contain user information' };
  if (raw.includes('#')) return { ok: false, message: 'must not contain a fragment' };
  if (url.port === '0') return { ok: false, message: 'must not use port 0 (nothing can listen on it)' };
  const literal = ipLiteral(url.hostname);
  if (literal === null && !isDnsName(url.hostname)) return { ok: false, message: `host ${url.hostname} is not a valid DNS name` };
  if (!allowPrivate && literal !== null && !isPublicAddress(literal)) return { ok: false, message: `must not point to a private, loopback or reserved address (${literal})` };
  if (!allowPrivate && isLocalhostName(url.hostname)) return { ok: false, message: `must not point to a private, loopback or reserved address (${url.hostname} is loopback, RFC 6761 §6.3)` };
  // Stored and requested percent-encoded: 1,000 emoji in a query were 2,031 characters as sent and 12,031 so.
  if (url.href.length > MAX_CALLBACK_AND_TOPIC_LENGTH) return { ok: false, message: `must be at most ${MAX_CALLBACK_AND_TOPIC_LENGTH} characters once percent-encoded, as the hub stores and requests it (this one is ${url.href.length})` };
  return { ok: true, url: url.href, host: url.host, hostKey: callbackHostKey(url.hostname) };
}

/**
 * The authority of `raw`, a URL of the scheme `protocol` (`https:`), as written, or why it has none. The
 * WHATWG parser repairs what RFC 3986 does not allow (`\` for `/`, `https:host`, `https:/host`,
 * `https:///host`) into a URL the subscriber never wrote, and so does decoding escapes before parsing
 * (`h%74tps:`): the hub would verify that URL, or take the string for a topic it is not equivalent to
 * (RFC 3986 §6.2.2 compares URIs, which such a string is not).
 */
function writtenAuthority(raw: string, protocol: string): { ok: true; authority: string } | { ok: false; message: string } {
  const query = raw.indexOf('?');
  if ((query === -1 ? raw : raw.slice(0, query)).includes('\\')) return { ok: false, message: 'must not contain a backslash before its query (URL parsers read it as /)' };
  const prefix = `${protocol}//`;
  const authority = raw.slice(0, prefix.length).toLowerCase() === prefix ? /^[^/?#]+/.exec(raw.slice(prefix.length))?.[0] : undefined;
  if (authority === undefined) return { ok: false, message: `must start with ${prefix} and a host (an RFC 3986 absolute URI)` };
  return { ok: true, authority };
}

/** Its length as a URI: each UTF-8 byte of a non-ASCII character written as a three-character `%XX` escape. */
function percentEncodedLength(text: string): number {
  let length = 0;
  for (const character of text) length += character.charCodeAt(0) < 0x80 ? 1 : 3 * Buffer.byteLength(character, 'utf8');
  return length;
}

const WHITESPACE_MESSAGE = 'must not contain whitespace or control characters';

/** Not part of any URL, and the WHATWG parser would strip some of them silently instead of refusing. */
function hasWhitespaceOrControl(raw: string): boolean {
  return [...raw].some((c) => c.trim() === '' || c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
}
