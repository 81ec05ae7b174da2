/**
 * The engine's loaded LoRA adapters and its slot limit (vLLM's --max-loras), with vLLM's
 * answers to load/unload: loading a loaded adapter or past the limit is a 400, unloading
 * an unknown one a 404. Pure bookkeeping; it does not touch the cache (adapter blocks are
 * salted by name, so they simply stop matching once no request uses the adapter).
 */

export type LoraResult =
  | { ok: true; message: string }
  | { ok: false; status: 400 | 404; message: string };

export class LoraRegistry {
  private readonly loaded = new Map<string, string>(); // name -> path

  constructor(
    readonly maxLoras: number,
    readonly baseModel: string,
    preload: readonly string[] = [],
  ) {
    for (const name of preload) this.loaded.set(name, `preloaded/${name}`);
  }

  has(name: string): boolean {
    return this.loaded.has(name);
  }

  /** Names in load order. */
  list(): string[] {
    return [...this.loaded.keys()];
  }

  load(name: string, path: string): LoraResult {
    if (name === "") return { ok: false, status: 400, message: "lora_name must not be empty" };
    if (name === this.baseModel)
      return { ok: false, status: 400, message: `"${name}" is the base model's name` };
    if (this.loaded.has(name))
      return {
        ok: false,
        status: 400,
        message: `The lora adapter '${name}' has already been loaded.`,
      };
    if (this.loaded.size >= this.maxLoras) {
      return {
        ok: false,
        status: 400,
        message: `cannot load lora adapter '${name}': all ${this.maxLoras} LoRA slots (--max-loras) are in use by ${this.list().join(", ") || "nothing"}; unload one first`,
      };
    }
    this.loaded.set(name, path);
    return { ok: true, message: `Success: LoRA adapter '${name}' added successfully.` };
  }

  unload(name: string): LoraResult {
    if (!this.loaded.delete(name))
      return { ok: false, status: 404, message: `The lora adapter '${name}' cannot be found.` };
    return { ok: true, message: `Success: LoRA adapter '${name}' removed successfully.` };
  }
}
