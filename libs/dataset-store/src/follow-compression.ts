import { compressBody, type CompressedBodies } from '@reviews/domain';

/**
 * The compressed bodies of the previous build, by identity hash, kept by the long-lived build worker:
 * a body whose bytes did not change between versions (the OpenAPI document always, often the
 * insights or the feeds) is not compressed again. Compression is deterministic, so a hit gives the
 * bytes compressing would. Only the latest build's bodies are kept, so the memo never outgrows one
 * snapshot's compressed bodies.
 */
export class CompressionMemo {
  #previous = new Map<string, CompressedBodies>();
  #current = new Map<string, CompressedBodies>();

  /** A `Compress` for one build; call `endBuild()` after it. */
  readonly compress = (identity: Buffer, hash: string): CompressedBodies => {
    const kept = this.#current.get(hash) ?? this.#previous.get(hash) ?? compressBody(identity);
    this.#current.set(hash, kept);
    // The build's bodies are transferred (detached) to the serving thread: hand out copies, keep the originals.
    return { gzip: Buffer.from(kept.gzip), br: Buffer.from(kept.br) };
  };

  /** Forgets the bodies the build that just ended did not use. */
  endBuild(): void {
    this.#previous = this.#current;
    this.#current = new Map();
  }
}
