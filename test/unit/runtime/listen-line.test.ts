import { describe, expect, test } from "bun:test";
import { listeningLine } from "../../../src/runtime/compose/listen-line.ts";

describe("the listening line", () => {
  test("a wildcard bind is named as bound, with the loopback URL for this host beside it", () => {
    expect(listeningLine("0.0.0.0", 8080)).toBe(
      "switchyard listening on http://0.0.0.0:8080 (every interface; http://127.0.0.1:8080 from this host)",
    );
    expect(listeningLine("::", 8443, "https")).toBe(
      "switchyard listening on https://[::]:8443 (every interface; https://[::1]:8443 from this host)",
    );
  });

  test("a specific address is the URL itself", () => {
    expect(listeningLine("127.0.0.1", 9)).toBe("switchyard listening on http://127.0.0.1:9");
    expect(listeningLine("fd00::5", 9)).toBe("switchyard listening on http://[fd00::5]:9");
  });
});
