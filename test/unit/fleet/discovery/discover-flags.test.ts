/** The --discover flags as the config loader reads them (flags, env, checks between fields). */
import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../../../src/config/load.ts";
import { configProblems } from "../../../support/config-problems.ts";

const problems = configProblems;

describe("--discover kubernetes flags", () => {
  test("defaults: off; port name http; namespace and kubeconfig left to the environment", () => {
    const c = loadConfig({ argv: [], env: {} });
    expect([
      c.discover,
      c.discoverPortName,
      c.discoverNamespace,
      c.discoverSelector,
      c.kubeconfig,
    ]).toEqual(["off", "http", undefined, undefined, undefined]);
  });

  test("flags and env set them", () => {
    const c = loadConfig({
      argv: [
        "--discover",
        "kubernetes",
        "--discover-selector",
        "app=vllm,tier in (a,b)",
        "--discover-port-name",
        "api",
      ],
      env: { SWITCHYARD_DISCOVER_NAMESPACE: "ml", SWITCHYARD_KUBECONFIG: "/etc/kc" },
    });
    expect([
      c.discover,
      c.discoverSelector,
      c.discoverPortName,
      c.discoverNamespace,
      c.kubeconfig,
    ]).toEqual(["kubernetes", "app=vllm,tier in (a,b)", "api", "ml", "/etc/kc"]);
  });

  test("kubernetes needs a selector; the other flags need kubernetes; bad values are named", () => {
    expect(problems(["--discover", "kubernetes"])).toEqual([
      expect.stringContaining(
        "--discover-selector (SWITCHYARD_DISCOVER_SELECTOR): needed with --discover kubernetes",
      ),
    ]);
    expect(problems(["--discover-selector", "app=x", "--kubeconfig", "/k"])).toEqual([
      "--discover-selector: only used with --discover kubernetes",
      "--kubeconfig: only used with --discover kubernetes",
    ]);
    expect(problems(["--discover", "consul"])[0]).toContain(
      "--discover (SWITCHYARD_DISCOVER): must be off or kubernetes",
    );
    expect(
      problems([
        "--discover",
        "kubernetes",
        "--discover-selector",
        "a",
        "--discover-namespace",
        "ML_Team",
      ])[0],
    ).toContain("must be a namespace name");
    expect(
      problems([
        "--discover",
        "kubernetes",
        "--discover-selector",
        "a",
        "--discover-port-name",
        "a-very-long-port-name",
      ])[0],
    ).toContain("must be a port name");
  });

  test("Deno and workerd refuse it by name (discovery is wired by the Bun entry only), but not at its default", () => {
    expect(problems(["--discover-selector", "a=b"], {}, "deno")).toEqual([
      expect.stringMatching(/^--discover-selector: not available on Deno \(Kubernetes discovery/),
    ]);
    expect(
      problems(["--discover", "kubernetes", "--discover-selector", "a=b"], {}, "workerd"),
    ).toEqual([
      expect.stringMatching(/^--discover: not available on workerd \(Kubernetes discovery/),
      expect.stringMatching(/^--discover-selector: not available on workerd/),
    ]);
    expect(problems([], { SWITCHYARD_DISCOVER: "kubernetes" }, "deno")[0]).toMatch(
      /^--discover: not available on Deno/,
    );
    expect(problems(["--discover", "off"], {}, "workerd")).toEqual([]);
  });
});
