/**
 * A request's prompt has a size limit of its own, far below the body limit: routing a prompt
 * costs the event loop time in proportion to its length (tokenizing, hashing, the index and
 * the load books touch every block), so without one a single client sending 15 MB text
 * prompts (well under the 16 MiB body limit) kept the loop blocked 10.9 s of 11.8 s. The size
 * is counted before any of that work: every character of the prompt field's strings, a token
 * id counting as one, whatever the field's shape (a string, token ids, chat messages, content
 * parts, a batch). It walks the field once and stops as soon as the limit is passed.
 */
import { RouterError } from "../../core/errors.ts";

/** Throws a 413 naming the field and the flag when `value` holds more than `limit` characters. */
export function checkPromptSize(value: unknown, field: string, limit: number | undefined): void {
  if (limit === undefined) return;
  if (sizeUpTo(value, limit) > limit) throw promptTooLong(field, limit);
}

/** The 413 for a prompt field past --max-prompt-chars (also raised while the body streams: prompt-scan.ts). */
export function promptTooLong(field: string, limit: number): RouterError {
  return new RouterError(
    "payload_too_large",
    `${field}: the prompt is longer than ${limit} characters (--max-prompt-chars)`,
    field,
  );
}

/**
 * Characters (token ids count one) in `value`, or a number above `limit` once it is passed.
 * Iterative, one frame per open array or object, so neither a deep nesting nor a long array
 * costs more than the part walked before the limit.
 */
function sizeUpTo(value: unknown, limit: number): number {
  let total = 0;
  const frames: { items: readonly unknown[]; next: number }[] = [{ items: [value], next: 0 }];
  while (frames.length > 0) {
    const f = frames[frames.length - 1]!;
    if (f.next >= f.items.length) {
      frames.pop();
      continue;
    }
    const v = f.items[f.next++];
    if (typeof v === "string") total += v.length;
    else if (typeof v === "number") total += 1;
    else if (Array.isArray(v)) frames.push({ items: v, next: 0 });
    else if (v !== null && typeof v === "object") frames.push({ items: Object.values(v), next: 0 });
    if (total > limit) return total;
  }
  return total;
}
