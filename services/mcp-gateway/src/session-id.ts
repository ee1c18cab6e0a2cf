import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * MCP session ids that any replica can check without shared state: `v1.<kid>.<payload>.<mac>`, where
 * payload is base64url(JSON {sid, iat, pv}) and mac is base64url(HMAC-SHA256(secret, "v1.<kid>.<payload>")).
 * `pv` is the protocol version initialize negotiated, which every later request must respect (MCP
 * 2025-06-18 basic/lifecycle) and which stands for a missing MCP-Protocol-Version header (basic/transports).
 * Every character is in [A-Za-z0-9_.-], the visible-ASCII range MCP requires. Ids never expire: SDK
 * clients do not re-initialize after a 404, so an expired id would strand them (notes/mcp.md §4.2).
 */
export interface SessionIds {
  mint(protocolVersion: string): string;
  /** The session an id stands for, or null when it is not one this secret signed. */
  verify(id: string): Session | null;
}

export interface Session {
  /** The version initialize negotiated; null for an id minted before ids recorded it. */
  readonly protocolVersion: string | null;
}

const VERSION = 'v1';
/** Far above a real id (~130 characters); anything longer is refused before any hashing. */
const MAX_ID_LENGTH = 256;

export function createSessionIds(secret: string): SessionIds {
  // The key id is derived from the secret, so an id signed with another secret is recognisably foreign.
  const kid = createHash('sha256').update(`mcp-session-kid:${secret}`).digest('base64url').slice(0, 8);
  const prefix = `${VERSION}.${kid}.`;
  const mac = (signed: string) => createHmac('sha256', secret).update(signed).digest('base64url');

  return {
    mint(protocolVersion) {
      const payload = Buffer.from(JSON.stringify({ sid: randomBytes(16).toString('hex'), iat: Math.floor(Date.now() / 1000), pv: protocolVersion })).toString('base64url');
      const signed = `${prefix}${payload}`;
      return `${signed}.${mac(signed)}`;
    },
    verify(id) {
      if (id.length > MAX_ID_LENGTH || !id.startsWith(prefix)) return null;
      const lastDot = id.lastIndexOf('.');
      const signed = id.slice(0, lastDot);
      if (signed.length <= prefix.length || signed.indexOf('.', prefix.length) !== -1) return null;
      // Compare the encoded text, not decoded bytes: base64url decoding skips stray characters.
      const given = Buffer.from(id.slice(lastDot + 1));
      const expected = Buffer.from(mac(signed));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
      // Signed by this secret, so minted here: the payload is JSON.
      const { pv } = JSON.parse(Buffer.from(signed.slice(prefix.length), 'base64url').toString('utf8')) as { pv?: unknown };
      return { protocolVersion: typeof pv === 'string' ? pv : null };
    },
  };
}
