/**
 * The prompt's size counted while the body streams in, without building the JSON: a byte
 * scanner that follows the body's nesting, and for each top-level field named as a prompt
 * field counts what prompt-size.ts counts on the parsed value (every string value's UTF-16
 * length, a number as one, object keys not at all). So a body whose prompt is past
 * --max-prompt-chars is refused after reading just past the limit's worth of prompt, with no
 * parse and no copy of the rest; a body a megabyte or more long costs the loop one linear pass
 * over bytes it reads anyway.
 *
 * It never throws and never decides that a body is valid: malformed JSON only makes it count
 * less (the parse that follows answers 400), and the parsed value is checked again after the
 * parse. A field named twice at top level (JSON.parse keeps the last) is counted per
 * occurrence, each against the limit; a duplicate key inside the prompt (a message with two
 * "content"s) counts both, so such a body may be refused where the parsed value would pass.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Longest top-level key remembered; prompt fields are short names. */
const MAX_KEY = 64;

export class PromptScanner {
  private readonly names: readonly string[];
  /** Open containers: true for an object, false for an array. */
  private readonly stack: boolean[] = [];
  private expectKey = false;
  private inString = false;
  private stringIsKey = false;
  private escape = false;
  /** Hex digits of a \u escape still to skip. */
  private hexLeft = 0;
  private inNumber = false;
  /** Decoded top-level key being read (undefined: not a top-level key or too long to matter). */
  private key: string | undefined;
  private hex = "";
  /** The top-level key just read, waiting for its value. */
  private lastKey: string | undefined;
  /** Index in `names` of the field whose value is being counted, or -1. */
  private counting = -1;
  /** Open containers when the counted value started (1: the body's object). */
  private countDepth = 0;
  private count = 0;

  constructor(
    promptFields: readonly string[],
    readonly limit: number,
  ) {
    this.names = promptFields;
  }

  /**
   * Scans the next bytes of the body; returns the prompt field that passed the limit (the
   * caller answers 413 naming it), or undefined.
   */
  push(bytes: Uint8Array): string | undefined {
    const n = bytes.length;
    let i = 0;
    while (i < n) {
      if (this.inString) {
        i = this.stringBytes(bytes, i);
        if (this.counting >= 0 && this.count > this.limit) return this.names[this.counting];
        continue;
      }
      const b = bytes[i++]!;
      if (this.inNumber && !isNumberByte(b)) this.inNumber = false;
      switch (b) {
        case QUOTE:
          this.inString = true;
          this.stringIsKey = this.expectKey;
          this.key = this.stringIsKey && this.stack.length === 1 ? "" : undefined;
          if (!this.stringIsKey) this.valueStarts();
          break;
        case 0x7b: // {
          this.valueStarts();
          this.stack.push(true);
          this.expectKey = true;
          break;
        case 0x5b: // [
          this.valueStarts();
          this.stack.push(false);
          this.expectKey = false;
          break;
        case 0x7d: // }
        case 0x5d: // ]
          this.stack.pop();
          this.expectKey = false;
          this.valueEnds();
          break;
        case 0x2c: // ,
          this.expectKey = this.stack[this.stack.length - 1] === true;
          this.valueEnds();
          break;
        case 0x3a: // :
          this.expectKey = false;
          break;
        default:
          if (!this.inNumber && (b === 0x2d || (b >= 0x30 && b <= 0x39))) {
            this.valueStarts();
            this.inNumber = true;
            if (this.counting >= 0 && ++this.count > this.limit) return this.names[this.counting];
          }
      }
    }
    return undefined;
  }

  /** A value begins: at the top level after a prompt field's key, counting starts. */
  private valueStarts(): void {
    if (this.counting < 0 && this.lastKey !== undefined && this.stack.length === 1) {
      const at = this.names.indexOf(this.lastKey);
      if (at >= 0) {
        this.counting = at;
        this.countDepth = 1;
        this.count = 0;
      }
    }
    this.lastKey = undefined;
  }

  /** After a string value, a `,` or a closing bracket: a counted value ends when the nesting is back at its field. */
  private valueEnds(): void {
    if (this.counting >= 0 && this.stack.length <= this.countDepth) this.counting = -1;
  }

  /** Bytes inside a string from `i`; returns where scanning goes on. */
  private stringBytes(bytes: Uint8Array, i: number): number {
    const n = bytes.length;
    const counted = this.counting >= 0 && !this.stringIsKey;
    while (i < n) {
      const b = bytes[i]!;
      if (this.hexLeft > 0) {
        this.hexLeft--;
        if (this.key !== undefined) {
          this.hex += String.fromCharCode(b);
          if (this.hexLeft === 0)
            this.addKey(String.fromCharCode(Number.parseInt(this.hex, 16) || 0));
        }
        i++;
        continue;
      }
      if (this.escape) {
        this.escape = false;
        if (b === 0x75) {
          this.hexLeft = 4;
          this.hex = "";
        } else if (this.key !== undefined) this.addKey(String.fromCharCode(b));
        i++;
        if (counted && ++this.count > this.limit) return i;
        continue;
      }
      if (b === QUOTE) {
        this.inString = false;
        if (this.stringIsKey) this.lastKey = this.key;
        else this.valueEnds();
        this.key = undefined;
        return i + 1;
      }
      if (b === BACKSLASH) {
        this.escape = true;
        i++;
        continue;
      }
      if (counted) {
        i = this.countRun(bytes, i);
        if (this.count > this.limit) return i;
      } else if (this.key !== undefined) {
        this.addKey(String.fromCharCode(b));
        i++;
      } else {
        // A string nobody counts: skip to its next quote or backslash (a byte loop: searching
        // for each separately would rescan the rest of the chunk at every backslash).
        while (i < n && bytes[i] !== QUOTE && bytes[i] !== BACKSLASH) i++;
      }
    }
    return i;
  }

  /**
   * The hot loop: a counted string's plain bytes from `i` up to a quote or backslash, adding
   * their UTF-16 length (a continuation byte adds nothing, a 4-byte sequence's lead two).
   */
  private countRun(bytes: Uint8Array, i: number): number {
    const n = bytes.length;
    const limit = this.limit;
    let c = this.count;
    while (i < n && c <= limit) {
      const b = bytes[i]!;
      if (b === QUOTE || b === BACKSLASH) break;
      if (b < 0x80 || (b >= 0xc0 && b < 0xf0)) c++;
      else if (b >= 0xf0) c += 2;
      i++;
    }
    this.count = c;
    return i;
  }

  private addKey(c: string): void {
    if (this.key === undefined) return;
    this.key = this.key.length < MAX_KEY ? this.key + c : undefined;
  }
}

function isNumberByte(b: number): boolean {
  return (
    (b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x2b || b === 0x2e || b === 0x65 || b === 0x45
  );
}
