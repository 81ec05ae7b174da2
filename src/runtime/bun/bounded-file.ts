/**
 * Reading a file an operator points the router at (--workers-file), with bounds: a regular
 * file only (after symlinks: a ConfigMap's file is a symlink to one), at most `maxBytes`,
 * read in one bounded pass. A symlink to /dev/zero grew the router by 400 MB/s and the read
 * never ended; a FIFO would block the read until someone writes. The file is opened without
 * blocking and checked on the open descriptor, so swapping it between the check and the read
 * cannot slip a device in; a file that grows past the bound while read is refused too.
 * Node's fs (works on Bun); no parsing here.
 */
import { constants } from "node:fs";
import { open, stat } from "node:fs/promises";

/** The file cannot be taken: not a regular file, or too large. */
export class FileRefusedError extends Error {
  override readonly name = "FileRefusedError";
}

export async function readBoundedText(path: string, maxBytes: number): Promise<string> {
  // A path check first: opening a FIFO for reading would block until a writer comes.
  const st = await stat(path);
  if (!st.isFile()) throw new FileRefusedError(`${path} is not a regular file`);
  if (st.size > maxBytes)
    throw new FileRefusedError(
      `${path} is ${st.size} bytes, more than the ${maxBytes} bytes allowed`,
    );
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const again = await fh.stat();
    if (!again.isFile()) throw new FileRefusedError(`${path} is not a regular file`);
    const buf = Buffer.alloc(maxBytes + 1);
    let n = 0;
    while (n < buf.length) {
      const { bytesRead } = await fh.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    if (n > maxBytes)
      throw new FileRefusedError(`${path} is more than the ${maxBytes} bytes allowed`);
    return buf.toString("utf8", 0, n);
  } finally {
    await fh.close();
  }
}

/**
 * What identifies the file's current version without reading it: device, inode, size and
 * modification time (a ConfigMap update swaps a symlink, so the inode changes).
 */
export async function fileVersion(path: string): Promise<string> {
  const st = await stat(path);
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
}
