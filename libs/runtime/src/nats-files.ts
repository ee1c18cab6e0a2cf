import { fromSeed } from '@nats-io/nkeys';

/** A NATS user's identity from a creds file: its JWT and NKey seed. */
export interface NatsUserCredentials {
  readonly jwt: string;
  readonly seed: string;
}

/**
 * A decorated block as the Go client's jwt.ParseDecoratedJWT reads nsc's files: a dashed line, the
 * content, a dashed line; LF or CRLF line ends, no final newline needed. nats.js's own parser wants LF
 * only and a final newline, so files that the nats CLI reads failed every connection.
 */
const DECORATED_BLOCK = /\s*(?:(?:-{3,}.*-{3,}\r?\n)([\w\-.=]+)(?:\r?\n-{3,}.*-{3,}(?:\r?\n|$)))/g;
/** A user NKey seed: `SU` and 56 more base32 characters. */
const USER_SEED_LINE = /^\s*(SU[A-Z2-7]{56})\s*$/m;

interface JwtClaims {
  readonly sub?: unknown;
  readonly exp?: unknown;
}

/**
 * The JWT and seed of a creds file, checked as the server will check them: a seed whose checksum holds,
 * of a user, and the very user the JWT names (`sub`), and a JWT not yet expired. Throws saying what is
 * wrong, never quoting the seed.
 */
export function parseNatsCreds(text: string, now: Date = new Date()): NatsUserCredentials {
  const [jwt, seed] = decoratedBlocks(text);
  if (jwt === undefined || seed === undefined) throw new Error('it is not a creds file: a user JWT and a user NKey seed, each between dashed lines, as nsc writes them');
  const claims = jwtClaims(jwt);
  const publicKey = userPublicKey(seed);
  if (claims.sub !== publicKey) throw new Error(`its seed is not the key of the user its JWT names (${String(claims.sub)})`);
  if (typeof claims.exp === 'number' && claims.exp * 1000 <= now.getTime()) throw new Error(`its user JWT expired at ${new Date(claims.exp * 1000).toISOString()}`);
  return { jwt, seed };
}

/**
 * The user seed in an NKey file, read as the Go client's nkeys.ParseDecoratedNKey reads one: a decorated
 * seed block, or the first line that is a user seed (`nk -gen user -pubout` adds the public key after it).
 */
export function parseNatsSeed(text: string): string {
  const decorated = decoratedBlocks(text).find((block) => block.startsWith('SU'));
  const seed = decorated ?? USER_SEED_LINE.exec(text)?.[1];
  if (seed === undefined) throw new Error('it holds no user NKey seed (SU…, as nsc or nk -gen user writes it)');
  userPublicKey(seed);
  return seed;
}

/** The contents of a text's decorated blocks, in order. */
function decoratedBlocks(text: string): string[] {
  return [...text.matchAll(DECORATED_BLOCK)].map((match) => match[1] as string);
}

/** The public key of a user seed; throws when the seed's checksum fails or it is not a user's. */
function userPublicKey(seed: string): string {
  let publicKey: string;
  try {
    publicKey = fromSeed(new TextEncoder().encode(seed)).getPublicKey();
  } catch (error) {
    throw new Error(`its NKey seed is not valid (${(error as Error).message})`);
  }
  if (!publicKey.startsWith('U')) throw new Error('its NKey seed is not a user seed (SU…)');
  return publicKey;
}

function jwtClaims(jwt: string): JwtClaims {
  const [header, payload, signature] = jwt.split('.');
  try {
    if (signature === undefined || payload === undefined || header === undefined) throw new Error('not three parts');
    const { alg } = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: unknown };
    if (typeof alg !== 'string' || !alg.startsWith('ed25519')) throw new Error(`algorithm ${String(alg)}`);
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as JwtClaims;
  } catch (error) {
    throw new Error(`its user JWT is not a NATS JWT (${(error as Error).message})`);
  }
}
