/**
 * --api-keys on Bun: the file read with Bun.file, parsed as JSON or (by extension) with
 * Bun.YAML and checked on a Worker (operator-file-parse.ts), its folder watched with node:fs. Only a regular file of at most MAX_KEYS_FILE_BYTES
 * is read (a symlink to /dev/zero or a huge file must not grow the router), and only when its
 * size, time or inode changed since the last read, so polling costs a stat, not a read.
 */
import { watch } from "node:fs";
import { stat } from "node:fs/promises";
import type { PackedKeys } from "../../protect/key-set.ts";
import { KeysFileError } from "../../protect/keys-document.ts";
import type { KeysFileSource } from "../../protect/keys-watch.ts";
import { parseOffLoop } from "./operator-file-parse.ts";

/**
 * The largest keys file read: 100,000 keys (the most a file may hold) take about 12 MiB of
 * JSON, or of YAML with the shared settings under `defaults`. A larger file is refused unread,
 * at the cost of a `stat`.
 */
export const MAX_KEYS_FILE_BYTES = 16 * 1024 * 1024;

const isYaml = (path: string) => /\.ya?ml$/i.test(path);

/** `onInline`: told when this binary has no parse worker and the file is parsed on the event loop. */
export function bunKeysFile(onInline?: () => void): KeysFileSource {
  let last: { stamp: string; text: string } | undefined;
  return {
    async read(path) {
      // stat follows symlinks (a mounted Secret's ..data swap): the target must be a regular file.
      const s = await stat(path);
      if (!s.isFile()) throw new Error("not a regular file");
      if (s.size > MAX_KEYS_FILE_BYTES)
        throw new Error(
          `the file is ${s.size} bytes, more than the ${MAX_KEYS_FILE_BYTES} bytes a keys file may have`,
        );
      const stamp = `${s.ino}:${s.size}:${s.mtimeMs}`;
      if (last?.stamp === stamp) return last.text;
      const text = await Bun.file(path).text();
      if (text.length > MAX_KEYS_FILE_BYTES)
        throw new Error(
          `the file is more than the ${MAX_KEYS_FILE_BYTES} bytes a keys file may have`,
        );
      last = { stamp, text };
      return text;
    },
    parse: (text, path) => (isYaml(path) ? Bun.YAML.parse(text) : JSON.parse(text)),
    async keys(text, path, where) {
      const r = await parseOffLoop({ kind: "keys", text, path, where }, onInline);
      if (r.ok) return r.value as PackedKeys;
      throw new KeysFileError(
        r.stage === "parse" ? `${where}: cannot parse (${r.message})` : r.message,
      );
    },
    watchDir(dir, onChange) {
      const w = watch(dir, () => onChange());
      return () => w.close();
    },
  };
}
