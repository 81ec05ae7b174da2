/**
 * A stream that can move: the moving reader (moving-reader.ts) over the first engine's answer,
 * and the proxy's side of each move. A move ends the failed try's settlement as failed
 * (`Settlement.migrated`: booking freed, outcome reported, fenced when the connection broke),
 * routes the continuation with the router's policy away from the workers that failed this
 * request, gives it a settlement of its own (which then owns booking, outcome and metrics) and
 * tries it up to the first byte like any try (attempt.ts, up to --max-retries workers). The
 * stream's observation (access line) goes with it from settlement to settlement. Moves take
 * from the fleet-wide retry budget.
 */
import type { WorkerId } from "../../../core/ids.ts";
import type { RequestObservation, StreamTrack } from "../../../observe/request-observation.ts";
import type { RouteDecision } from "../../../router/index.ts";
import type { MigrationOptions } from "../../deps.ts";
import { attemptUpstream } from "../attempt.ts";
import { NO_DEADLINES } from "../deadlines.ts";
import type { ForwardDeps, ForwardInput } from "../forward-input.ts";
import { upstreamRequestHeaders } from "../headers.ts";
import type { StreamEnd, StreamHooks } from "../observe-stream.ts";
import { Settlement, type SettleDeps } from "../settlement.ts";
import type { UpstreamBody } from "../upstream.ts";
import type { ApiKind } from "./continuation.ts";
import { MovingReader, type Continuation, type MoveHost } from "./moving-reader.ts";

/** A request header that turns moving off for one request (`off`, `false`, `0`, `no`). */
export const HEADER_MIGRATE = "x-switchyard-migrate";

export interface MovingContext {
  readonly input: ForwardInput;
  readonly d: ForwardDeps;
  readonly kind: ApiKind;
  readonly options: MigrationOptions;
  /** Workers this request must not go to again (those that failed it); moves add to it. */
  readonly exclude: Set<WorkerId>;
  readonly sinks: SettleDeps;
  readonly obs: RequestObservation | undefined;
  /** A routing decision away from `exclude` (forward's own). */
  readonly decide: () => Promise<RouteDecision>;
  /** May one more retry be spent (the fleet-wide budget)? */
  readonly budget: () => boolean;
}

/** Whether this request's stream may move: the flag, the path and the client's header. */
export function movable(
  input: ForwardInput,
  options: MigrationOptions | undefined,
): options is MigrationOptions {
  if (options === undefined || options.maxMoves <= 0 || input.stream !== true) return false;
  const h = input.request.headers.get(HEADER_MIGRATE);
  return h === null || !/^(off|false|0|no)$/i.test(h.trim());
}

/** The body and hooks of a stream that can move, starting on the try `s` settles. */
export function movingStream(
  ctx: MovingContext,
  first: Uint8Array | undefined,
  reader: UpstreamBody,
  s: Settlement,
  status: number,
): { reader: MovingReader; hooks: StreamHooks } {
  const relay = new Relay(s, s.stream(status, true));
  const host = new Host(ctx, relay);
  const moving = new MovingReader(first, reader, host, {
    kind: ctx.kind,
    body: ctx.input.body,
    maxMoves: ctx.options.maxMoves,
    keepBytes: ctx.options.keepBytes,
    memory: ctx.options.memory,
  });
  relay.reader = moving;
  return { reader: moving, hooks: relay };
}

/**
 * The stream's hooks, passed on to whichever settlement carries the stream now. The bytes the
 * client gets are counted by the first settlement's hooks (a tenant's charge reads them), whatever
 * engine sent them; the request hears the end from the first settlement, which made its answer.
 */
class Relay implements StreamHooks {
  reader: MovingReader | undefined;
  /** Data events the client got before the current try began (its own tokens start there). */
  #base = 0;
  #last = 0;
  /** The stream's observation, when no try carries it (every move failed). */
  track: StreamTrack | undefined;
  readonly onChunk: StreamHooks["onChunk"];
  readonly onTail: StreamHooks["onTail"];

  constructor(
    readonly first: Settlement,
    firstHooks: StreamHooks,
    public current: Settlement | undefined = first,
  ) {
    this.onChunk = firstHooks.onChunk;
    this.onTail = firstHooks.onTail;
  }

  onTokens(total: number): void {
    this.#last = total;
    this.current?.tokens(total - this.#base);
  }

  onEnd(how: StreamEnd, tokens: number, bytes: number): void {
    this.reader?.release();
    const end =
      how === "done" && this.reader?.failedEnd !== undefined ? this.reader.failedEnd : how;
    if (this.current !== undefined) this.current.end({ how: "stream", end, tokens, bytes });
    else this.track?.end(end, tokens, bytes);
    if (this.current !== this.first) this.first.movedStreamEnded();
  }

  switchTo(s: Settlement | undefined, track: StreamTrack | undefined): void {
    this.current = s;
    this.track = s === undefined ? track : undefined;
    this.#base = this.#last;
  }
}

class Host implements MoveHost {
  constructor(
    private readonly ctx: MovingContext,
    private readonly relay: Relay,
  ) {}

  get workerId(): bigint {
    return this.relay.current!.workerId;
  }

  watch(onDown: (reason: string, planned: boolean) => void): () => void {
    const s = this.relay.current;
    if (s === undefined) return () => {};
    const { registry } = this.ctx.d;
    const after = this.ctx.options.migrateAfterMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const offDown = registry.onUnavailable(s.workerId, (reason) => onDown(reason, false));
    // Taken out to drain: its engine still serves, so the stream stays until --migrate-after;
    // a worker put back in rotation meanwhile (an admin's undrain) keeps it, watched again.
    let offDrain = () => {};
    const onDrain = (reason: string) => {
      timer = setTimeout(() => {
        timer = undefined;
        if (registry.get(s.workerId)?.healthy === true)
          offDrain = registry.onDraining(s.workerId, onDrain);
        else onDown(reason, true);
      }, after);
    };
    offDrain = registry.onDraining(s.workerId, onDrain);
    return () => {
      offDown();
      offDrain();
      if (timer !== undefined) clearTimeout(timer);
    };
  }

  budget(): boolean {
    return this.ctx.budget();
  }

  gaveUp(outcome: "refused" | "failed", why: string): void {
    this.ctx.d.observe.metrics.streamMigrations.inc([outcome]);
    const id = this.ctx.obs?.id;
    this.ctx.d.observe.log.warn(
      `a stream that failed mid-answer was not moved (${outcome}): ${why}`,
      id !== undefined ? { request_id: id } : undefined,
    );
  }

  async move(
    body: Uint8Array,
    why: string,
    fence: boolean,
    planned: boolean,
  ): Promise<Continuation | undefined> {
    const { ctx } = this;
    const { d, input } = ctx;
    const old = this.relay.current!;
    const from = old.workerId;
    const track = old.migrated(why, fence, !planned);
    ctx.exclude.add(from);
    for (let attempt = 0; attempt <= d.upstream.maxRetries; attempt++) {
      let decision: RouteDecision;
      try {
        decision = await ctx.decide();
      } catch {
        break; // no worker left (or the client left while waiting)
      }
      const s = new Settlement(decision, ctx.sinks, ctx.obs);
      const id = decision.worker.workerId;
      const rec = d.registry.get(id);
      if (!rec) {
        s.retry({ kind: "unlisted" });
        ctx.exclude.add(id);
        continue;
      }
      const headers = upstreamRequestHeaders(
        input.request,
        decision.worker.dpRank,
        input.upstreamAuthorization,
        d.upstream.forwarding,
      );
      s.sent(headers, rec.url, input.path);
      const a = await attemptUpstream({
        call: d.upstream.call,
        baseUrl: rec.url,
        path: input.path,
        headers,
        body,
        clientSignal: input.request.signal,
        deadlines: d.upstream.deadlines ?? NO_DEADLINES,
        stream: true,
        last: false,
        retryOn: d.upstream.retry?.statuses,
        watchWorker: (onDown) => d.registry.onUnavailable(id, onDown),
      });
      if (a.kind === "answer") {
        const ok =
          a.res.status === 200 &&
          a.reader !== undefined &&
          a.first !== undefined &&
          !a.first.done &&
          a.first.value !== undefined;
        if (ok) {
          s.continues(a.res.status, track);
          s.firstToken();
          this.relay.switchTo(s, undefined);
          ctx.obs?.migrated(from, id, why);
          d.observe.metrics.streamMigrations.inc(["moved"]);
          return { reader: a.reader!, first: a.first!.value, workerId: id };
        }
        // Not a stream to splice on (an error status, an empty answer): this worker failed the continuation.
        void a.reader?.cancel().catch(() => {});
        ctx.exclude.add(id);
        s.retry({
          kind: "failed",
          reason: `continuation answered HTTP ${a.res.status}${a.res.status === 200 ? " with no stream" : ""}`,
          status: a.res.status === 200 ? undefined : a.res.status,
        });
        if (attempt < d.upstream.maxRetries && !ctx.budget()) break;
        continue;
      }
      if (a.kind === "client_gone") {
        s.end({ how: "client_gone" });
        break;
      }
      ctx.exclude.add(id);
      s.retry(a);
      // Every further try of a continuation draws from the one retry budget, as forward's do.
      if (attempt < d.upstream.maxRetries && !ctx.budget()) break;
    }
    this.relay.switchTo(undefined, track);
    return undefined;
  }
}
