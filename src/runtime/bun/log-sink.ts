/**
 * Log lines to stderr on Bun through its buffered FileSink, written out at most every 50 ms
 * (or once 64 KiB wait), so under load the lines of many requests leave in one write instead
 * of one write (a syscall, and a wake-up of the pipe's reader) each. bench/observe/log-cost.ts
 * measured the FileSink cheapest of the writers per line (src/observe/README.md); in a router
 * under load the difference between one write per line and batched writes was within the
 * shared test machine's noise. A line waits at most 50 ms; `flush` before exit.
 */
export interface LogSink {
  write(line: string): void;
  flush(): Promise<void>;
}

/** Longest a line waits before it is written. */
const FLUSH_EVERY_MS = 50;
/** Bytes waiting that trigger a write at once. */
const FLUSH_BYTES = 64 * 1024;

export function stderrLogSink(): LogSink {
  const w = Bun.stderr.writer({ highWaterMark: FLUSH_BYTES * 2 });
  let waiting = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = async (): Promise<void> => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    waiting = 0;
    await w.flush();
  };
  return {
    write(line) {
      w.write(line + "\n");
      waiting += line.length + 1;
      if (waiting >= FLUSH_BYTES) void flush().catch(() => {});
      else if (timer === undefined)
        timer = setTimeout(() => void flush().catch(() => {}), FLUSH_EVERY_MS);
    },
    flush,
  };
}
