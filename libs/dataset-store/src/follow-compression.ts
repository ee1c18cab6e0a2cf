import { brotliBody, compressBody, gzipBody, type Compress, type CompressedBodies } from '@reviews/domain';

/**
 * The compressed bodies of the previous build, by identity hash, kept by the long-lived build worker:
 * a body whose bytes did not change between versions (the OpenAPI document always, often the
 * insights or the feeds) is not compressed again. Compression is deterministic, so a hit gives the
 * bytes compressing would. Only the latest build's bodies are kept, so the memo never outgrows one
 * snapshot's compressed bodies.
 *
 * A build may leave brotli for later (ADR 0007): its new bodies get their gzip variant only, and
 * `compressDeferred()`, called once the content is on its way, makes the brotli ones.
 */
export class CompressionMemo {
  #previous = new Map<string, CompressedBodies>();
  #current = new Map<string, CompressedBodies>();
  /** New bodies of the current build whose brotli variant is left for later (identity copied: the build's own is transferred). */
  #deferred = new Map<string, { identity: Buffer; gzip: Buffer }>();

  /** A `Compress` for one build; call `compressDeferred()` (when deferring) and then `endBuild()` after it. */
  compressor(deferBrotli: boolean): Compress {
    this.#deferred.clear();
    return (identity, hash) => {
      const kept = this.#current.get(hash) ?? this.#previous.get(hash);
      if (kept || !deferBrotli) {
        const bodies = kept ?? compressBody(identity);
        this.#current.set(hash, bodies);
        // The build's bodies are transferred (detached) to the serving thread: hand out copies, keep the originals.
        return { gzip: Buffer.from(bodies.gzip), br: bodies.br && Buffer.from(bodies.br) };
      }
      const deferred = this.#deferred.get(hash) ?? { identity: Buffer.from(identity), gzip: gzipBody(identity) };
      this.#deferred.set(hash, deferred);
      return { gzip: Buffer.from(deferred.gzip), br: null };
    };
  }

  /** The brotli bodies the current build left for later, by hash (copies with buffers of their own, to transfer); kept from now on. */
  compressDeferred(): Map<string, Uint8Array> {
    const late = new Map<string, Uint8Array>();
    for (const [hash, { identity, gzip }] of this.#deferred) {
      const br = brotliBody(identity);
      this.#current.set(hash, { gzip, br });
      late.set(hash, new Uint8Array(br));
    }
    this.#deferred.clear();
    return late;
  }

  /** Forgets the bodies the build that just ended did not use. */
  endBuild(): void {
    this.#previous = this.#current;
    this.#current = new Map();
  }
}
