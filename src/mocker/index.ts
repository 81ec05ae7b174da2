export { runMockerCli } from "./cli.ts";
export { CACHED_TOKENS_HEADER, DP_RANK_HEADER } from "./headers.ts";
export { type MockerHandle, startMocker, type StartMockerOptions } from "./server.ts";
export { MOCKER_DEFAULTS, type MockerOptions, parseMockerArgs } from "./options.ts";
export { DEFAULT_TIMING, type TimingModel } from "./timing.ts";
