import { MemoryAffinityStore } from "../../src/router/sessions/memory-store.ts";
import { runAffinityStoreContract } from "./affinity-store.contract.ts";

runAffinityStoreContract("memory", async (clock, opts) => {
  const store = new MemoryAffinityStore({ clock, ...opts });
  return {
    store,
    advance: async (ms) => clock.advance(ms),
    reap: async () => void store.reapExpired(),
    cleanup: () => store.close(),
  };
});
