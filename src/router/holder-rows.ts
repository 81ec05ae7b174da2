/**
 * Bitset rows of worker slots, for the records that two or more slots hold at once (a radix
 * tree node cached by several workers, a booked block shared by several workers' requests).
 * A record held by one slot keeps that slot inline and needs no row; most records are, so the
 * memory of a record does not grow with the number of registered workers: a bitset in every
 * record would make 2,000 workers cost 280 bytes per tree node and 512 per booked block, and
 * the index would keep that width and its peak size after the workers left.
 *
 * Rows are `words` int32s (32 slots each) in one Int32Array with a free list; widening or
 * narrowing the rows copies only the rows, and `compact` renumbers them densely once most
 * are free, so the array follows the live rows. Owners store a row's index in their record.
 */

const INITIAL_ROWS = 64;

export class HolderRows {
  /** Int32 words per row (32 slots each). */
  words = 1;
  /** The rows, `words` int32s each; replaced when it grows, narrows or compacts. */
  bits = new Int32Array(INITIAL_ROWS);
  /** Rows in use. */
  live = 0;
  #capacity = INITIAL_ROWS;
  #next = 0;
  /** Free rows, linked through their first word. */
  #free = -1;

  /** A zeroed row. */
  alloc(): number {
    let r: number;
    if (this.#free >= 0) {
      r = this.#free;
      this.#free = this.bits[r * this.words]!;
      this.bits[r * this.words] = 0;
    } else {
      if (this.#next === this.#capacity) this.#resize(Math.ceil(this.#capacity * 1.5), this.words);
      r = this.#next++;
    }
    this.live++;
    return r;
  }

  /** Give a row back; its bits need not be clear. */
  free(r: number): void {
    const base = r * this.words;
    this.bits.fill(0, base, base + this.words);
    this.bits[base] = this.#free;
    this.#free = r;
    this.live--;
  }

  has(r: number, slot: number): boolean {
    return (this.bits[r * this.words + (slot >>> 5)]! & (1 << (slot & 31))) !== 0;
  }

  set(r: number, slot: number): void {
    this.bits[r * this.words + (slot >>> 5)]! |= 1 << (slot & 31);
  }

  clear(r: number, slot: number): void {
    this.bits[r * this.words + (slot >>> 5)]! &= ~(1 << (slot & 31));
  }

  /** The lowest slot set in the row, or -1. */
  first(r: number): number {
    const base = r * this.words;
    for (let w = 0; w < this.words; w++) {
      const word = this.bits[base + w]!;
      if (word !== 0) return (w << 5) + 31 - Math.clz32(word & -word);
    }
    return -1;
  }

  /** Whether rows a and b hold the same slots. */
  same(a: number, b: number): boolean {
    const x = a * this.words;
    const y = b * this.words;
    for (let w = 0; w < this.words; w++) if (this.bits[x + w] !== this.bits[y + w]) return false;
    return true;
  }

  /**
   * Rows wide enough for slots [0, span), in a power of two of words: the rows follow the
   * slots in use, both ways (only the rows are copied). The owner holds no slot >= span.
   */
  fit(span: number): void {
    const need = Math.max(1, Math.ceil(span / 32));
    let words = 1;
    while (words < need) words *= 2;
    if (words !== this.words) this.#resize(this.#capacity, words);
  }

  /** Bytes held. */
  bytes(): number {
    return this.bits.byteLength;
  }

  /** Most rows are free: worth a compaction. */
  get sparse(): boolean {
    return this.#capacity > INITIAL_ROWS && this.live * 4 < this.#capacity;
  }

  /**
   * Renumber the live rows densely. `forEachRow(move)` must call `move(row)` once for every
   * row the owner references and store the index it returns in place of the old one.
   */
  compact(forEachRow: (move: (row: number) => number) => void): void {
    const words = this.words;
    const cap = Math.max(INITIAL_ROWS, Math.ceil(this.live * 1.5));
    const old = this.bits;
    const bits = new Int32Array(cap * words);
    let next = 0;
    forEachRow((row) => {
      bits.set(old.subarray(row * words, row * words + words), next * words);
      return next++;
    });
    this.bits = bits;
    this.#capacity = cap;
    this.#next = next;
    this.#free = -1;
    this.live = next;
  }

  #resize(capacity: number, words: number): void {
    const old = this.bits;
    const oldWords = this.words;
    const bits = new Int32Array(capacity * words);
    if (words === oldWords) bits.set(old.subarray(0, Math.min(old.length, bits.length)));
    else {
      const keep = Math.min(words, oldWords);
      for (let r = 0; r < this.#next; r++)
        bits.set(old.subarray(r * oldWords, r * oldWords + keep), r * words);
      // Free rows are linked through their first word, which the copy kept.
    }
    this.bits = bits;
    this.words = words;
    this.#capacity = capacity;
  }
}
