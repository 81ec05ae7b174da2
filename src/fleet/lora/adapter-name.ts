/**
 * What a LoRA adapter name may be, when the router itself asks an engine to load or evict
 * it (`--lora-load-on-demand`, `--lora-evict`). The name comes from an unauthenticated
 * client's `model` field and ends up in `lora_path` (`--lora-path`, `{name}` replaced), so
 * `"model":"../../../../root/.ssh/id_rsa"` must never reach an engine, and a
 * client must not be able to make the router load (or evict for) names nobody meant.
 *
 * Valid: 1 to 128 characters; parts separated by single "/" (Hugging Face style
 * `org/adapter`); each part starts with a letter or digit and holds only letters, digits,
 * ".", "_" and "-". So no part is "." or "..", no name starts with "/" or holds "\", ":",
 * "%", spaces or control characters: substituted into a path template, a valid name
 * never climbs out of the template's directory and never names an absolute path.
 *
 * The allowlist (`--lora-allow`, repeatable): patterns where `*` stands for any run of
 * characters (`team-a-*`, `org/*`); the rest is literal. Empty: every valid name.
 *
 * PURE.
 */

export const MAX_ADAPTER_NAME_LENGTH = 128;

const PART = "[A-Za-z0-9][A-Za-z0-9._-]*";
const VALID_NAME = new RegExp(`^${PART}(?:/${PART})*$`);

/** Why `name` is not a valid adapter name for the router to load, or undefined when it is. */
export function adapterNameProblem(name: string): string | undefined {
  if (name.length === 0) return "is empty";
  if (name.length > MAX_ADAPTER_NAME_LENGTH)
    return `is ${name.length} characters; the limit is ${MAX_ADAPTER_NAME_LENGTH}`;
  if (!VALID_NAME.test(name)) {
    return 'may hold only letters, digits, ".", "_", "-" and "/" between parts, each part starting with a letter or digit';
  }
  return undefined;
}

/** Adapter names the router may load or evict: `*` globs; an empty list allows every name. */
export class AdapterAllowlist {
  readonly #patterns: readonly RegExp[];

  constructor(readonly patterns: readonly string[] = []) {
    this.#patterns = patterns.map(globToRegExp);
  }

  /** Whether any pattern is set (else every valid name is allowed). */
  get restricted(): boolean {
    return this.#patterns.length > 0;
  }

  allows(name: string): boolean {
    return this.#patterns.length === 0 || this.#patterns.some((p) => p.test(name));
  }
}

/** `team-*` -> /^team-.*$/; every other character literal. */
export function globToRegExp(glob: string): RegExp {
  const body = glob
    .split("*")
    .map((s) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${body}$`, "s");
}
