/**
 * The simulated engine's HTTP vocabulary, shared by every route group: a route's shape, JSON
 * and error answers, the error a handler throws to choose its status, reading a JSON body,
 * the admin check. It holds no route and no engine state.
 */
import type { Context } from "hono";
import { stringifyBigint } from "../core/json.ts";
import { errorBody } from "./openai.ts";

/**
 * One route of a group. Groups return lists of these and server.ts mounts them, so the set of
 * known paths (405 rather than 404 for another method) is read off the routes themselves.
 */
export interface Route {
  readonly method: "GET" | "POST";
  /** Hono path; one ending in `*` takes the rest of the path and is not a "known" exact path. */
  readonly path: string;
  readonly handle: (c: Context) => Response | Promise<Response>;
}

const JSON_HEADERS = { "content-type": "application/json" };

export function json(body: unknown, status = 200, headers?: Record<string, string>): Response {
  return new Response(stringifyBigint(body), { status, headers: { ...JSON_HEADERS, ...headers } });
}

export function error(
  status: number,
  message: string,
  type: string,
  headers?: Record<string, string>,
): Response {
  return new Response(errorBody(status, message, type), {
    status,
    headers: { ...JSON_HEADERS, ...headers },
  });
}

/** Thrown by a handler to answer with this status; the app's error handler turns it into `error(...)`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
  ) {
    super(message);
  }
}

export async function readJson(req: Request): Promise<unknown> {
  const text = await req.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(
      400,
      `request body is not valid JSON: ${text.slice(0, 80)}`,
      "invalid_request_error",
    );
  }
}

/** The admin routes' check: with `--admin-token` set, the request must carry it as a Bearer token. */
export function adminCheck(adminToken: string | undefined): (req: Request) => void {
  return (req) => {
    if (adminToken === undefined) return;
    if (req.headers.get("authorization") !== `Bearer ${adminToken}`) {
      throw new HttpError(401, "admin route: missing or wrong Bearer token", "unauthorized");
    }
  };
}
