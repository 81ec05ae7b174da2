import { describe, expect, test } from "bun:test";
import {
  acceptedRequestId,
  MAX_REQUEST_ID_LENGTH,
  newRequestId,
} from "../../../src/observe/request-id.ts";

describe("request ids", () => {
  test("a client's safe id is kept as it is", () => {
    for (const id of [
      "abc",
      "3f2b9c1e-7a4d-4e8b-9c2a-1b5e6f7a8d9c",
      "tenant:42/req.7_x+y=z@host",
      "a".repeat(MAX_REQUEST_ID_LENGTH),
    ]) {
      expect(acceptedRequestId(id)).toBe(id);
    }
  });

  test("empty, too long or unsafe ids are not kept (they would be echoed and logged)", () => {
    for (const id of [
      "",
      "a".repeat(MAX_REQUEST_ID_LENGTH + 1),
      "has space",
      'quote"',
      "new\nline",
      "tab\t",
      "<script>",
      "é",
      null,
      undefined,
    ]) {
      expect(acceptedRequestId(id)).toBeUndefined();
    }
  });

  test("made ids are UUIDs and differ", () => {
    const a = newRequestId();
    const b = newRequestId();
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(a).not.toBe(b);
    expect(acceptedRequestId(a)).toBe(a);
  });
});
