/**
 * The process's CPU, memory and file descriptors for /metrics (src/observe/process-metrics.ts),
 * read from /proc/self on Linux as Prometheus' own client libraries do; elsewhere from
 * process.cpuUsage() and process.memoryUsage() without the fd counts.
 */
import { readdirSync, readFileSync } from "node:fs";
import type { ProcessProbe } from "../../observe/process-metrics.ts";

/** USER_HZ (clock ticks per second in /proc/self/stat): 100 on every Linux we run on. */
const CLOCK_TICKS = 100;
const PAGE_BYTES = 4096;

function procStat(): string[] | undefined {
  try {
    const s = readFileSync("/proc/self/stat", "utf8");
    // Fields after the command name, which may hold spaces: field 3 (state) is index 0.
    return s.slice(s.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

export function processProbe(): ProcessProbe {
  const startSeconds = (Date.now() - performance.now()) / 1000;
  const linux = procStat() !== undefined;
  let maxFds: number | undefined;
  if (linux) {
    try {
      const m = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
      if (m) maxFds = Number(m[1]);
    } catch {
      // no limits file: the gauge stays out
    }
  }
  return {
    cpuSeconds() {
      const f = linux ? procStat() : undefined;
      // utime and stime are fields 14 and 15 of the whole line (11 and 12 after the name).
      if (f !== undefined) return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS;
      const u = process.cpuUsage();
      return (u.user + u.system) / 1e6;
    },
    residentBytes() {
      const f = linux ? procStat() : undefined;
      // rss (field 24) is in pages.
      return f !== undefined ? Number(f[21]) * PAGE_BYTES : process.memoryUsage().rss;
    },
    virtualBytes() {
      const f = linux ? procStat() : undefined;
      return f !== undefined ? Number(f[20]) : undefined;
    },
    openFds() {
      if (!linux) return undefined;
      try {
        return readdirSync("/proc/self/fd").length;
      } catch {
        return undefined;
      }
    },
    maxFds: () => maxFds,
    startTimeSeconds: () => startSeconds,
  };
}
