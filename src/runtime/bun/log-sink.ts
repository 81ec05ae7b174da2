/**
 * Log lines to stderr on Bun through its buffered FileSink, written out once per turn of the
 * event loop: lines of one turn leave in one write. bench/observe/log-cost.ts measured it
 * against console.error and process.stderr.write for the access line (src/observe/README.md):
 * the cheapest of the three on a pipe, as a container's stderr is. `flush` before exit.
 */
export interface LogSink {
  write(line: string): void;
  flush(): Promise<void>;
}

export function stderrLogSink(): LogSink {
  const w = Bun.stderr.writer();
  let queued = false;
  const flush = async (): Promise<void> => {
    queued = false;
    await w.flush();
  };
  return {
    write(line) {
      w.write(line + "\n");
      if (!queued) {
        queued = true;
        setImmediate(() => void flush().catch(() => {}));
      }
    },
    flush,
  };
}
