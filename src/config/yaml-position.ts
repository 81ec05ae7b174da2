/**
 * Where a YAML text stops being readable, for parsers that say only "Unexpected token" (Bun's
 * YAML parser reports no position). The text is read again line by line: the first line whose
 * end makes the document unreadable is the line, and the character after the longest start
 * of that line that still reads is the column (an opening bracket never closed, a quote never ended, a key indented under a
 * scalar). Pure: the parser is passed in.
 */

/** Beyond these the search would cost more than the answer is worth: the message has no position. */
const MAX_LINES = 5_000;
const MAX_LINE_CHARS = 1_000;

export interface TextPosition {
  /** 1-based. */
  readonly line: number;
  /** 1-based. */
  readonly column: number;
  /** The line's text, for the message. */
  readonly text: string;
}

export function locateYamlError(
  text: string,
  parse: (text: string) => unknown,
): TextPosition | undefined {
  const lines = text.split("\n");
  if (lines.length > MAX_LINES) return undefined;
  const reads = (t: string): boolean => {
    try {
      parse(t);
      return true;
    } catch {
      return false;
    }
  };
  let before = "";
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (reads(before + line + "\n")) {
      before += line + "\n";
      continue;
    }
    // The column: just after the longest start of the line that still reads (a key is
    // unreadable until its colon, so the first failing start would point at every key).
    let column = 1;
    if (line.length <= MAX_LINE_CHARS) {
      for (let c = line.length - 1; c > 0; c--) {
        if (reads(before + line.slice(0, c))) {
          column = c + 1;
          break;
        }
      }
    }
    return { line: i + 1, column, text: line.replace(/\r$/, "") };
  }
  return undefined;
}

/** " at line L, column C (`text`)", or "" when the position is unknown. */
export function describePosition(p: TextPosition | undefined): string {
  if (p === undefined) return "";
  const shown = p.text.length > 80 ? `${p.text.slice(0, 77)}...` : p.text;
  return ` at line ${p.line}, column ${p.column} (${JSON.stringify(shown)})`;
}
