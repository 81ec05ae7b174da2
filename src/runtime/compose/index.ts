/** The shared composition's face: what the runtime entries (bun.ts, portable.ts) and tests import. */
export { composeRouter, type ComposedRouter } from "./compose-router.ts";
export { reachableHost, type RuntimeChoices, type RuntimeEdge } from "./choices.ts";
export { StartupError } from "./startup-error.ts";
export { listeningLine } from "./listen-line.ts";
