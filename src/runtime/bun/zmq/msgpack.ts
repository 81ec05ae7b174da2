/**
 * A small MessagePack decoder (no dependency), enough for engines' KV event payloads.
 *
 * Two ways in:
 * - `decode(bytes)` turns one whole value into JS: nil → null, bool, int → number (bigint
 *   when a 64-bit value is outside ±(2^53−1)), float32/64 → number, str → string,
 *   bin → Uint8Array (a view into the input, not a copy), array → Array, map → Map (keys of
 *   any type, insertion order kept), ext → MsgpackExt.
 * - `MsgpackReader` walks the bytes value by value, so a decoder that knows the shape can
 *   read u64 hashes straight to bigint (`readU64`), token lists straight into a Uint32Array
 *   and skip what it does not need, without building intermediate objects.
 *
 * Malformed or truncated input throws MsgpackError. Pure: no I/O, nothing runtime-specific.
 */

export class MsgpackError extends Error {
  override readonly name = "MsgpackError";
}

/** An extension value (type −128..127) with its raw data (a view into the input). */
export interface MsgpackExt {
  readonly type: number;
  readonly data: Uint8Array;
}

export type MsgpackValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | MsgpackValue[]
  | Map<MsgpackValue, MsgpackValue>
  | MsgpackExt;

/** The family of the next value, from its first byte. */
export type MsgpackKind =
  | "nil"
  | "bool"
  | "int"
  | "float"
  | "str"
  | "bin"
  | "array"
  | "map"
  | "ext";

const KIND = buildKindTable();

function buildKindTable(): MsgpackKind[] {
  const t = new Array<MsgpackKind>(256);
  for (let b = 0; b < 256; b++) {
    if (b <= 0x7f || b >= 0xe0) t[b] = "int";
    else if (b <= 0x8f) t[b] = "map";
    else if (b <= 0x9f) t[b] = "array";
    else if (b <= 0xbf) t[b] = "str";
    else if (b === 0xc0) t[b] = "nil";
    else if (b === 0xc2 || b === 0xc3) t[b] = "bool";
    else if (b >= 0xc4 && b <= 0xc6) t[b] = "bin";
    else if ((b >= 0xc7 && b <= 0xc9) || (b >= 0xd4 && b <= 0xd8)) t[b] = "ext";
    else if (b === 0xca || b === 0xcb) t[b] = "float";
    else if (b >= 0xcc && b <= 0xd3) t[b] = "int";
    else if (b >= 0xd9 && b <= 0xdb) t[b] = "str";
    else if (b === 0xdc || b === 0xdd) t[b] = "array";
    else if (b === 0xde || b === 0xdf) t[b] = "map";
    else t[b] = "nil"; // 0xc1 is never used; readers reject it below.
  }
  return t;
}

const TWO32 = 4294967296;

/** Strings up to this length are interned (direct-mapped table, last writer wins). */
const INTERN_MAX_LEN = 24;
const INTERN_SLOTS = 1024;
const INTERN: (string | undefined)[] = new Array(INTERN_SLOTS);

function sameAscii(s: string, bytes: Uint8Array, at: number, n: number): boolean {
  if (s.length !== n) return false;
  for (let i = 0; i < n; i++) if (s.charCodeAt(i) !== bytes[at + i]) return false;
  return true;
}
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** A str's bytes as text; invalid UTF-8 is malformed input like any other (a MsgpackError, not TextDecoder's TypeError). */
function decodeUtf8(bytes: Uint8Array, at: number, n: number): string {
  try {
    return utf8.decode(bytes.subarray(at, at + n));
  } catch {
    throw new MsgpackError(`str at offset ${at} is not valid UTF-8`);
  }
}

export class MsgpackReader {
  private readonly bytes: Uint8Array;
  private readonly view: DataView;
  /** Offset of the next unread byte. */
  pos: number;
  /** Offset one past the last byte this reader may read. */
  private readonly end: number;

  constructor(bytes: Uint8Array, start = 0, end = bytes.length) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = start;
    this.end = end;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  /** Family of the next value; does not consume it. */
  peekKind(): MsgpackKind {
    this.need(1);
    const b = this.bytes[this.pos]!;
    if (b === 0xc1) throw new MsgpackError(`reserved byte 0xc1 at offset ${this.pos}`);
    return KIND[b]!;
  }

  /** Consume a nil and return true, or return false and consume nothing. */
  tryNil(): boolean {
    this.need(1);
    if (this.bytes[this.pos] !== 0xc0) return false;
    this.pos++;
    return true;
  }

  readBool(): boolean {
    const b = this.byte();
    if (b === 0xc2) return false;
    if (b === 0xc3) return true;
    throw this.unexpected(b, "bool");
  }

  readArrayHeader(): number {
    const b = this.byte();
    if (b >= 0x90 && b <= 0x9f) return b & 0x0f;
    if (b === 0xdc) return this.u16();
    if (b === 0xdd) return this.u32();
    throw this.unexpected(b, "array");
  }

  readMapHeader(): number {
    const b = this.byte();
    if (b >= 0x80 && b <= 0x8f) return b & 0x0f;
    if (b === 0xde) return this.u16();
    if (b === 0xdf) return this.u32();
    throw this.unexpected(b, "map");
  }

  /** Any int format; a bigint only when the value is outside the safe-integer range. */
  readInt(): number | bigint {
    const b = this.byte();
    if (b <= 0x7f) return b;
    if (b >= 0xe0) return b - 0x100;
    switch (b) {
      case 0xcc:
        return this.byte();
      case 0xcd:
        return this.u16();
      case 0xce:
        return this.u32();
      case 0xcf: {
        const hi = this.u32(),
          lo = this.u32();
        return hi < 0x200000 ? hi * TWO32 + lo : (BigInt(hi) << 32n) | BigInt(lo);
      }
      case 0xd0:
        return this.i8();
      case 0xd1:
        return this.i16();
      case 0xd2:
        return this.i32();
      case 0xd3: {
        const hi = this.i32(),
          lo = this.u32();
        // Safe when -(2^53 - 1) <= value <= 2^53 - 1.
        const safe = hi < 0x200000 && (hi > -0x200000 || (hi === -0x200000 && lo > 0));
        return safe ? hi * TWO32 + lo : (BigInt(hi) << 32n) + BigInt(lo);
      }
    }
    throw this.unexpected(b, "int");
  }

  /** An int that must fit a JS number exactly (lengths, sizes, ranks, token ids). */
  readSafeInt(): number {
    const v = this.readInt();
    if (typeof v === "bigint") throw new MsgpackError(`integer ${v} is too large here`);
    return v;
  }

  /** Any int format as u64 bits, always a bigint; negatives are reinterpreted (two's complement). */
  readU64(): bigint {
    const b = this.byte();
    if (b <= 0x7f) return BigInt(b);
    if (b >= 0xe0) return BigInt.asUintN(64, BigInt(b - 0x100));
    switch (b) {
      case 0xcc:
        return BigInt(this.byte());
      case 0xcd:
        return BigInt(this.u16());
      case 0xce:
        return BigInt(this.u32());
      // int64 has the same bits as its u64 reinterpretation.
      case 0xcf:
      case 0xd3:
        return this.view.getBigUint64(this.take(8));
      case 0xd0:
        return BigInt.asUintN(64, BigInt(this.i8()));
      case 0xd1:
        return BigInt.asUintN(64, BigInt(this.i16()));
      case 0xd2:
        return BigInt.asUintN(64, BigInt(this.i32()));
    }
    throw this.unexpected(b, "int");
  }

  /**
   * An array of `n` ints in [0, 2^32) (the header already read) straight into `out`
   * (token ids: no JS array, no number boxing). Returns false, having skipped the rest,
   * if an element is not such an int; `out` then holds zeros in its place.
   */
  readU32Array(out: Uint32Array, n: number): boolean {
    const bytes = this.bytes;
    let ok = true;
    for (let i = 0; i < n; i++) {
      this.need(1);
      const b = bytes[this.pos]!;
      if (b <= 0x7f) {
        out[i] = b;
        this.pos++;
      } else if (b === 0xcc) {
        this.need(2);
        out[i] = bytes[this.pos + 1]!;
        this.pos += 2;
      } else if (b === 0xcd) {
        this.need(3);
        out[i] = (bytes[this.pos + 1]! << 8) | bytes[this.pos + 2]!;
        this.pos += 3;
      } else if (b === 0xce) {
        this.pos++;
        out[i] = this.u32();
      } else if (KIND[b] === "int") {
        const v = this.readInt();
        if (typeof v === "number" && v >= 0 && v <= 0xffffffff) out[i] = v;
        else ok = false;
      } else {
        this.skip();
        ok = false;
      }
    }
    return ok;
  }

  /** A float, or an int read as a number. */
  readFloat(): number {
    const b = this.peekByte();
    if (b === 0xca) {
      this.pos++;
      const v = this.view.getFloat32(this.take(4));
      return v;
    }
    if (b === 0xcb) {
      this.pos++;
      return this.view.getFloat64(this.take(8));
    }
    return Number(this.readInt());
  }

  readStr(): string {
    const b = this.byte();
    let n: number;
    if (b >= 0xa0 && b <= 0xbf) n = b & 0x1f;
    else if (b === 0xd9) n = this.byte();
    else if (b === 0xda) n = this.u16();
    else if (b === 0xdb) n = this.u32();
    else throw this.unexpected(b, "str");
    return this.utf8(n);
  }

  /** A bin value as a view into the input (no copy). */
  readBin(): Uint8Array {
    const b = this.byte();
    let n: number;
    if (b === 0xc4) n = this.byte();
    else if (b === 0xc5) n = this.u16();
    else if (b === 0xc6) n = this.u32();
    else throw this.unexpected(b, "bin");
    const at = this.take(n);
    return this.bytes.subarray(at, at + n);
  }

  /** Any value, as `decode` describes. */
  readValue(): MsgpackValue {
    const b = this.peekByte();
    switch (KIND[b]) {
      case "int":
        return this.readInt();
      case "nil":
        if (b === 0xc1) throw new MsgpackError(`reserved byte 0xc1 at offset ${this.pos}`);
        this.pos++;
        return null;
      case "bool":
        return this.readBool();
      case "float":
        return this.readFloat();
      case "str":
        return this.readStr();
      case "bin":
        return this.readBin();
      case "array": {
        const n = this.readArrayHeader();
        const out = new Array<MsgpackValue>(n);
        for (let i = 0; i < n; i++) out[i] = this.readValue();
        return out;
      }
      case "map": {
        const n = this.readMapHeader();
        const out = new Map<MsgpackValue, MsgpackValue>();
        for (let i = 0; i < n; i++) {
          const k = this.readValue();
          out.set(k, this.readValue());
        }
        return out;
      }
      case "ext":
        return this.readExt();
    }
    throw new MsgpackError(`unknown byte 0x${b.toString(16)} at offset ${this.pos}`);
  }

  /** Skip one value (and everything inside it) without decoding it. */
  skip(): void {
    let pending = 1;
    while (pending > 0) {
      pending--;
      const b = this.byte();
      if (b <= 0x7f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) continue;
      if (b <= 0x8f) {
        pending += 2 * (b & 0x0f);
        continue;
      }
      if (b <= 0x9f) {
        pending += b & 0x0f;
        continue;
      }
      if (b <= 0xbf) {
        this.take(b & 0x1f);
        continue;
      }
      switch (b) {
        case 0xc4:
        case 0xd9:
          this.take(this.byte());
          break;
        case 0xc5:
        case 0xda:
          this.take(this.u16());
          break;
        case 0xc6:
        case 0xdb:
          this.take(this.u32());
          break;
        case 0xc7:
          this.take(this.byte() + 1);
          break;
        case 0xc8:
          this.take(this.u16() + 1);
          break;
        case 0xc9:
          this.take(this.u32() + 1);
          break;
        case 0xca:
          this.take(4);
          break;
        case 0xcb:
          this.take(8);
          break;
        case 0xcc:
        case 0xd0:
          this.take(1);
          break;
        case 0xcd:
        case 0xd1:
          this.take(2);
          break;
        case 0xce:
        case 0xd2:
          this.take(4);
          break;
        case 0xcf:
        case 0xd3:
          this.take(8);
          break;
        case 0xd4:
          this.take(2);
          break;
        case 0xd5:
          this.take(3);
          break;
        case 0xd6:
          this.take(5);
          break;
        case 0xd7:
          this.take(9);
          break;
        case 0xd8:
          this.take(17);
          break;
        case 0xdc:
          pending += this.u16();
          break;
        case 0xdd:
          pending += this.u32();
          break;
        case 0xde:
          pending += 2 * this.u16();
          break;
        case 0xdf:
          pending += 2 * this.u32();
          break;
        default:
          throw new MsgpackError(`reserved byte 0x${b.toString(16)} at offset ${this.pos - 1}`);
      }
    }
  }

  private readExt(): MsgpackExt {
    const b = this.byte();
    let n: number;
    switch (b) {
      case 0xd4:
        n = 1;
        break;
      case 0xd5:
        n = 2;
        break;
      case 0xd6:
        n = 4;
        break;
      case 0xd7:
        n = 8;
        break;
      case 0xd8:
        n = 16;
        break;
      case 0xc7:
        n = this.byte();
        break;
      case 0xc8:
        n = this.u16();
        break;
      case 0xc9:
        n = this.u32();
        break;
      default:
        throw this.unexpected(b, "ext");
    }
    const type = this.i8();
    const at = this.take(n);
    return { type, data: this.bytes.subarray(at, at + n) };
  }

  /**
   * Short ASCII strings (tags, field names, media) repeat in every event: they come from a
   * small intern table (one hash loop + one compare, no allocation); TextDecoder for the rest.
   */
  private utf8(n: number): string {
    const at = this.take(n);
    const bytes = this.bytes;
    if (n <= INTERN_MAX_LEN) {
      let h = n;
      for (let i = at; i < at + n; i++) {
        const c = bytes[i]!;
        if (c >= 0x80) return decodeUtf8(bytes, at, n);
        h = (Math.imul(h, 31) + c) | 0;
      }
      const slot = h & (INTERN_SLOTS - 1);
      const cached = INTERN[slot];
      if (cached !== undefined && sameAscii(cached, bytes, at, n)) return cached;
      let s = "";
      for (let i = at; i < at + n; i++) s += String.fromCharCode(bytes[i]!);
      INTERN[slot] = s;
      return s;
    }
    return decodeUtf8(bytes, at, n);
  }

  private need(n: number): void {
    if (this.pos + n > this.end) {
      throw new MsgpackError(
        `truncated input: need ${n} byte(s) at offset ${this.pos}, have ${this.end - this.pos}`,
      );
    }
  }

  /** Reserve n bytes; returns their start offset. */
  private take(n: number): number {
    this.need(n);
    const at = this.pos;
    this.pos += n;
    return at;
  }

  private peekByte(): number {
    this.need(1);
    return this.bytes[this.pos]!;
  }

  private byte(): number {
    this.need(1);
    return this.bytes[this.pos++]!;
  }

  private i8(): number {
    const v = this.byte();
    return v >= 0x80 ? v - 0x100 : v;
  }

  private u16(): number {
    return this.view.getUint16(this.take(2));
  }

  private i16(): number {
    return this.view.getInt16(this.take(2));
  }

  private u32(): number {
    return this.view.getUint32(this.take(4));
  }

  private i32(): number {
    return this.view.getInt32(this.take(4));
  }

  private unexpected(b: number, want: string): MsgpackError {
    return new MsgpackError(
      `expected ${want}, found ${KIND[b] ?? "?"} (0x${b.toString(16)}) at offset ${this.pos - 1}`,
    );
  }
}

/** Decode exactly one value; trailing bytes are an error. */
export function decode(bytes: Uint8Array): MsgpackValue {
  const r = new MsgpackReader(bytes);
  const v = r.readValue();
  if (!r.done) throw new MsgpackError(`${bytes.length - r.pos} trailing byte(s) after the value`);
  return v;
}
