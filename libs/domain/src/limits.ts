/**
 * The limits the public interface states. The services enforce these constants and the OpenAPI
 * document and wire schemas state them, so what a client reads is what the server holds it to.
 */

/** Longest request target any service reads (RFC 9112 §3 asks for at least 8,000 octets). */
export const MAX_REQUEST_TARGET_LENGTH = 8 * 1024;
/** Largest request header block. */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Largest MCP request body, after decoding a Content-Encoding: tool arguments are a few short strings. */
export const MAX_MCP_BODY_BYTES = 64 * 1024;
/**
 * Most messages in one JSON-RPC batch (protocol versions before 2025-06-18, which removed batches): the
 * body limit alone would let one POST run thousands of tool calls.
 */
export const MAX_MCP_BATCH_MESSAGES = 100;
/** Largest WebSub hub request body: real subscription requests are forms of a few hundred bytes. */
export const MAX_HUB_BODY_BYTES = 16 * 1024;
/**
 * Longest `hub.callback` and `hub.topic`, as given and once percent-encoded: the hub stores both and
 * sends them in every verification, and a topic has equivalent spellings of any length (dot segments,
 * leading zeros in its port, characters the host's IDNA mapping drops).
 */
export const MAX_CALLBACK_AND_TOPIC_LENGTH = 2048;
/** W3C WebSub §5.1: a `hub.secret` MUST be less than 200 bytes. */
export const MAX_SECRET_BYTES = 199;
/**
 * `Retry-After` of a subscribe refused because the hub holds its maximum of subscriptions: room comes
 * only as leases end or subscribers unsubscribe, so sooner would only repeat the refusal.
 */
export const HUB_FULL_RETRY_AFTER_SECONDS = 3600;
