/**
 * The byte-level BPE's memory of pieces it has merged: piece -> ids, looked up by where the
 * piece lies in the text (text, start, end) rather than by a substring. Why: a first-sight
 * 128k-token prompt has ~120k pieces, most of them seen before (common words); keyed by a
 * `Map<string, …>`, each lookup first cut a substring and had the engine hash it, which cost
 * more than the split itself. Here a hit costs one pass over the piece's characters (hash,
 * then compare) and copies ids out of one shared buffer; all state is a few typed arrays, so
 * nothing per piece for the garbage collector to trace.
 *
 * Open addressing with linear probing over a table twice the entries; a probe gives up after
 * `MAX_PROBE` slots (a miss: the piece is merged again, and not stored), so text crafted to
 * collide costs a bounded amount per piece. Cleared whole when any bound is reached (entries,
 * key characters, ids), as HF's word cache is. Runtime-free; no I/O.
 */

const MAX_PROBE = 16;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

export class PieceCache {
  /** entry + 1 per slot; 0 is empty. */
  private readonly slots: Int32Array;
  private readonly mask: number;
  private readonly hashOf: Int32Array;
  /** Entry e's key is keys[keyAt[e] .. keyAt[e + 1]), its ids ids[idAt[e] .. idAt[e + 1]). */
  private readonly keyAt: Int32Array;
  private readonly keys: Uint16Array;
  private readonly idAt: Int32Array;
  /** Every entry's ids, back to back (read with idsFrom / idsTo). */
  readonly ids: Uint32Array;
  private count = 0;

  constructor(
    readonly maxEntries = 1 << 16,
    maxKeyChars = 1 << 20,
    maxIds = 1 << 19,
  ) {
    let size = 2;
    while (size < maxEntries * 2) size *= 2;
    this.slots = new Int32Array(size);
    this.mask = size - 1;
    this.hashOf = new Int32Array(maxEntries);
    this.keyAt = new Int32Array(maxEntries + 1);
    this.idAt = new Int32Array(maxEntries + 1);
    this.keys = new Uint16Array(maxKeyChars);
    this.ids = new Uint32Array(maxIds);
  }

  get size(): number {
    return this.count;
  }

  /** FNV-1a over the UTF-16 units of text[start, end). */
  static hash(text: string, start: number, end: number): number {
    let h = FNV_OFFSET;
    for (let i = start; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), FNV_PRIME);
    return h ^ (h >>> 15);
  }

  /** The entry holding text[start, end) (hash from `hash`), or -1. */
  find(text: string, start: number, end: number, hash: number): number {
    const len = end - start;
    const { slots, mask, keys, keyAt } = this;
    let slot = hash & mask;
    for (let probe = 0; probe < MAX_PROBE; probe++) {
      const e = slots[slot]! - 1;
      if (e < 0) return -1;
      if (this.hashOf[e] === hash) {
        const k = keyAt[e]!;
        if (keyAt[e + 1]! - k === len) {
          let i = 0;
          while (i < len && keys[k + i] === text.charCodeAt(start + i)) i++;
          if (i === len) return e;
        }
      }
      slot = (slot + 1) & mask;
    }
    return -1;
  }

  idsFrom(entry: number): number {
    return this.idAt[entry]!;
  }
  idsTo(entry: number): number {
    return this.idAt[entry + 1]!;
  }

  /** Remembers text[start, end) -> ids[0 .. n) (not already held: `find` missed it). */
  add(
    text: string,
    start: number,
    end: number,
    hash: number,
    ids: ArrayLike<number>,
    n: number,
  ): void {
    const len = end - start;
    if (len > this.keys.length || n > this.ids.length) return;
    let e = this.count;
    if (
      e === this.maxEntries ||
      this.keyAt[e]! + len > this.keys.length ||
      this.idAt[e]! + n > this.ids.length
    ) {
      this.clear();
      e = 0;
    }
    let slot = hash & this.mask;
    let probe = 0;
    while (this.slots[slot] !== 0) {
      if (++probe === MAX_PROBE) return; // a crowded neighbourhood: not worth a longer probe
      slot = (slot + 1) & this.mask;
    }
    const k = this.keyAt[e]!;
    for (let i = 0; i < len; i++) this.keys[k + i] = text.charCodeAt(start + i);
    const at = this.idAt[e]!;
    for (let i = 0; i < n; i++) this.ids[at + i] = ids[i]!;
    this.keyAt[e + 1] = k + len;
    this.idAt[e + 1] = at + n;
    this.hashOf[e] = hash;
    this.slots[slot] = e + 1;
    this.count = e + 1;
  }

  clear(): void {
    this.slots.fill(0);
    this.count = 0;
  }
}
