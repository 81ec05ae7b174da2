/**
 * The community's benchmark clients bench:clients runs, pinned: each file at one commit of its
 * project, with the SHA-256 of its text, so a run says exactly what ran. They are never kept in
 * this repository: get.ts copies them from a checkout (or a folder) the user names into CACHE_DIR.
 */
import { homedir } from "node:os";
import { join } from "node:path";

export interface PinnedFile {
  /** Path inside the project's repository. */
  readonly path: string;
  readonly sha256: string;
}

export interface PinnedClient {
  readonly name: "sglang" | "vllm";
  readonly repo: string;
  readonly commit: string;
  readonly files: readonly PinnedFile[];
}

/**
 * SGLang's bench_serving.py at sgl-project/sglang 88a6f9da ("bench_serving support PD
 * Disaggregation", #11542, 2025-10-14): the last version that is one file importing nothing
 * beyond aiohttp, numpy, requests, tqdm and transformers at the top (the next, d0a64c7e, imports
 * pybase64, datasets and PIL; from f158869c on it imports the sglang package). It has the
 * generated-shared-prefix and random-ids datasets and the sglang-oai / sglang-oai-chat backends.
 */
export const SGLANG: PinnedClient = {
  name: "sglang",
  repo: "sgl-project/sglang",
  commit: "88a6f9dab5cc67b71d85a93a9d3f924879e33aa8",
  files: [
    {
      path: "python/sglang/bench_serving.py",
      sha256: "ff5eae60d6e13bbcc7b1279bc1156a2039b55ce1acf2dad53b32a35164d2246b",
    },
  ],
};

/**
 * vLLM's multi-turn benchmark at vllm-project/vllm 4845aee6 ("[Benchmark] Add --trust-remote-code
 * flag to multi-turn benchmark", #41661, 2026-05-05), the three files it needs.
 */
export const VLLM: PinnedClient = {
  name: "vllm",
  repo: "vllm-project/vllm",
  commit: "4845aee6b78c5543e036df1f9bbb8a9bfa4961f2",
  files: [
    {
      path: "benchmarks/multi_turn/benchmark_serving_multi_turn.py",
      sha256: "ff1ef1708ef936432111596e0320c3b8af0c9062a0150a3a490ee672d5628d36",
    },
    {
      path: "benchmarks/multi_turn/bench_dataset.py",
      sha256: "e34b3d602a0f096d580da1dc0cf3103ec0d112717c6c4a403d656cf4d5facf0a",
    },
    {
      path: "benchmarks/multi_turn/bench_utils.py",
      sha256: "b968e44ef6260fd1cea8410b3bf4cab751d9d4ad14bdc43f6268d113ad81a548",
    },
  ],
};

export const CLIENTS = [SGLANG, VLLM] as const;

/** The Python packages both clients import, installed from the local wheel index. */
export const PACKAGES = ["aiohttp", "numpy", "pandas", "requests", "tqdm", "transformers"] as const;

/** Where the clients, their venv and the stand-in module live: outside the repository. */
export const CACHE_DIR =
  process.env.SWITCHYARD_CLIENTS_DIR ?? join(homedir(), ".cache", "switchyard", "bench-clients");

export const clientDir = (c: PinnedClient) => join(CACHE_DIR, c.name);
export const venvPython = () => join(CACHE_DIR, "venv", "bin", "python");
/** PYTHONPATH entry holding the stand-in `vllm` package (see get.ts). */
export const shimDir = () => join(CACHE_DIR, "shim");
