import type { IncomingMessage, ServerResponse } from 'node:http';
import { constants, crc32, deflateRaw } from 'node:zlib';
import { COMPRESSION_THRESHOLD_BYTES, compressionSettings, JSON_CONTENT_TYPE, type ContentCoding } from '@reviews/domain';
import { chooseContentCoding, negotiableAcceptEncoding } from '@reviews/runtime';

/**
 * A memoized answer's head, deflated once and left open: the gzip header and its deflate blocks up to a sync
 * flush, which ends byte-aligned and not final, so each request's tail can follow as the stream's last block.
 */
export interface GzippedHead {
  readonly prefix: Buffer;
  readonly crc: number;
  readonly length: number;
}

/** Magic, deflate, no flags, no time, no extra flags, OS unknown (RFC 1952 §2.3): the same bytes on every replica. */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff]);
/** What one stored deflate block holds (RFC 1951 §3.2.4: LEN is 16 bits). */
const MAX_STORED_BLOCK = 0xffff;
const CODINGS: ReadonlySet<ContentCoding> = new Set(['identity', 'gzip']);

const gzipped = new WeakMap<Buffer, GzippedHead | 'deflating'>();

/**
 * The head's gzip when made, else null: the first request that asks for it starts deflating it on the thread
 * pool and is answered unencoded, as are the requests until it is done, so no request waits for a compression
 * (reviews.json as a resource is megabytes at 10,000 reviews). Kept as long as the memo keeps the head.
 */
export function gzippedHead(head: Buffer): GzippedHead | null {
  const known = gzipped.get(head);
  if (known !== undefined) return known === 'deflating' ? null : known;
  // Below it, compression saves less than its headers cost, as for the documents.
  if (head.length < COMPRESSION_THRESHOLD_BYTES) return null;
  gzipped.set(head, 'deflating');
  deflateRaw(head, { level: compressionSettings(head.length).gzipLevel, finishFlush: constants.Z_SYNC_FLUSH }, (error, deflated) => {
    // A failed deflate (out of memory) leaves the head to be tried again by a later request.
    if (error) gzipped.delete(head);
    else gzipped.set(head, { prefix: Buffer.concat([GZIP_HEADER, deflated]), crc: crc32(head), length: head.length });
  });
  return null;
}

/**
 * The rest of a gzip member whose prefix is `head`'s: `tail` as stored (uncompressed) blocks, the last one
 * final, then the CRC-32 and length of head and tail together (RFC 1951 §3.2.4, RFC 1952 §2.2). One member,
 * so decoders that read only the first (Python's httpx) get it all. A tail is a request id: a few bytes.
 */
export function gzipEnding(head: GzippedHead, tail: Buffer): Buffer {
  const blocks = Math.max(1, Math.ceil(tail.length / MAX_STORED_BLOCK));
  const ending = Buffer.allocUnsafe(blocks * 5 + tail.length + 8);
  let at = 0;
  for (let block = 0; block < blocks; block++) {
    const bytes = tail.subarray(block * MAX_STORED_BLOCK, (block + 1) * MAX_STORED_BLOCK);
    // BFINAL on the last block, BTYPE 00 (stored); the rest of the byte pads to the boundary.
    ending[at] = block === blocks - 1 ? 1 : 0;
    ending.writeUInt16LE(bytes.length, at + 1);
    ending.writeUInt16LE(~bytes.length & 0xffff, at + 3);
    at += 5 + bytes.copy(ending, at + 5);
  }
  ending.writeUInt32LE(crc32(tail, head.crc), at);
  ending.writeUInt32LE((head.length + tail.length) >>> 0, at + 4);
  return ending;
}

/**
 * A memoized answer, `head` then `tail`, as one 200: gzip when the request accepts it (RFC 9110 §12.5.3) and the
 * head's gzip is made, else as it is. Headers, head and tail leave in one socket write, without copying the head.
 */
export function sendMemoizedAnswer(req: IncomingMessage, res: ServerResponse, head: Buffer, tail: Buffer): void {
  const acceptEncoding = negotiableAcceptEncoding(req);
  const gzip = acceptEncoding !== undefined && chooseContentCoding(acceptEncoding, CODINGS) === 'gzip' ? gzippedHead(head) : null;
  const [first, last] = gzip === null ? [head, tail] : [gzip.prefix, gzipEnding(gzip, tail)];
  const length = first.length + last.length;
  res.writeHead(200, gzip === null ? { 'content-type': JSON_CONTENT_TYPE, 'content-length': length } : { 'content-type': JSON_CONTENT_TYPE, 'content-encoding': 'gzip', 'content-length': length });
  res.cork();
  res.write(first);
  res.end(last);
  res.uncork();
}
