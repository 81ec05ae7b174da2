/**
 * Engine-backed sessions (the `session_control` of a sticky multi-turn session): the router opens
 * one on the chosen engine and closes it exactly once. The registry counts every open and close per
 * session id, so tests can check "exactly once" from the outside. Time (ms) is passed in; expiry is
 * reported, not enforced.
 */

export interface SessionInfo {
  readonly session_id: string;
  /** Seconds, as given at open. */
  readonly timeout: number;
  readonly open: boolean;
  readonly opened_count: number;
  readonly closed_count: number;
  readonly opened_at_ms: number | null;
  readonly last_used_ms: number | null;
  /** Open but unused for longer than its timeout (an engine would have dropped it). */
  readonly expired: boolean;
}

interface Entry {
  timeoutS: number;
  open: boolean;
  openedCount: number;
  closedCount: number;
  openedAt: number | null;
  lastUsed: number | null;
}

export const DEFAULT_SESSION_TIMEOUT_S = 300;

export class SessionRegistry {
  private readonly sessions = new Map<string, Entry>();

  private entry(id: string): Entry {
    let e = this.sessions.get(id);
    if (e === undefined) {
      e = {
        timeoutS: DEFAULT_SESSION_TIMEOUT_S,
        open: false,
        openedCount: 0,
        closedCount: 0,
        openedAt: null,
        lastUsed: null,
      };
      this.sessions.set(id, e);
    }
    return e;
  }

  open(id: string, timeoutS: number, now: number): void {
    const e = this.entry(id);
    e.timeoutS = timeoutS;
    e.open = true;
    e.openedCount++;
    e.openedAt = now;
    e.lastUsed = now;
  }

  /** Counted even for unknown or already-closed sessions: a double close must be visible. */
  close(id: string, now: number): void {
    const e = this.entry(id);
    e.open = false;
    e.closedCount++;
    e.lastUsed = now;
  }

  /** A request ran inside the session. */
  touch(id: string, now: number): void {
    const e = this.sessions.get(id);
    if (e !== undefined) e.lastUsed = now;
  }

  get(id: string, now: number): SessionInfo | undefined {
    const e = this.sessions.get(id);
    return e === undefined ? undefined : info(id, e, now);
  }

  list(now: number): SessionInfo[] {
    return [...this.sessions].map(([id, e]) => info(id, e, now));
  }

  get openCount(): number {
    let n = 0;
    for (const e of this.sessions.values()) if (e.open) n++;
    return n;
  }
}

function info(id: string, e: Entry, now: number): SessionInfo {
  return {
    session_id: id,
    timeout: e.timeoutS,
    open: e.open,
    opened_count: e.openedCount,
    closed_count: e.closedCount,
    opened_at_ms: e.openedAt,
    last_used_ms: e.lastUsed,
    expired: e.open && e.lastUsed !== null && now - e.lastUsed > e.timeoutS * 1000,
  };
}
