/**
 * --api-keys on Bun: the file read with Bun.file, parsed as JSON or (by extension) with
 * Bun.YAML, its folder watched with node:fs. Only a regular file of at most MAX_KEYS_FILE_BYTES
 * is read (a symlink to /dev/zero or a huge file must not grow the router), and only when its
 * size, time or inode changed since the last read, so polling costs a stat, not a read.
 */
import { watch } from "node:fs";
import { stat } from "node:fs/promises";
import type { KeysFileSource } from "../../protect/keys-watch.ts";

/** 100,000 keys with limits fit in about 20 MiB of YAML. */
export const MAX_KEYS_FILE_BYTES = 32 * 1024 * 1024;

const isYaml = (path: string) => /\.ya?ml$/i.test(path);

export function bunKeysFile(): KeysFileSource {
  let last: { stamp: string; text: string } | undefined;
  return {
    async read(path) {
      // stat follows symlinks (a mounted Secret's ..data swap): the target must be a regular file.
      const s = await stat(path);
      if (!s.isFile()) throw new Error("not a regular file");
      if (s.size > MAX_KEYS_FILE_BYTES) throw new Error(`${s.size} bytes; at most ${MAX_KEYS_FILE_BYTES}`);
      const stamp = `${s.ino}:${s.size}:${s.mtimeMs}`;
      if (last?.stamp === stamp) return last.text;
      const text = await Bun.file(path).text();
      if (text.length > MAX_KEYS_FILE_BYTES) throw new Error(`more than ${MAX_KEYS_FILE_BYTES} bytes`);
      last = { stamp, text };
      return text;
    },
    parse: (text, path) => (isYaml(path) ? Bun.YAML.parse(text) : JSON.parse(text)),
    watchDir(dir, onChange) {
      const w = watch(dir, () => onChange());
      return () => w.close();
    },
  };
}
