/** Naming a pull source to the engine on llm-d's P2P contract: the header and the body's remote_kv_source. */
import { describe, expect, test } from "bun:test";
import {
  HEADER_KV_SOURCE,
  hostPortOf,
  kvRequestIdOf,
  withKvSource,
} from "../../../../src/edge/proxy/kv-source.ts";
import { parseRemoteKvSource } from "../../../../src/mocker/peer-routes.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

describe("kv-source", () => {
  test("a planned pull: header and body field, which the simulated engine reads back; the client's bytes follow unchanged", () => {
    const body = enc.encode(' {"model":"m","prompt":[1,2,3],"seed":12345678901234567890}');
    const headers: Record<string, string> = { "content-type": "application/json" };
    const r = withKvSource(body, headers, {
      url: "http://10.0.0.7:8002",
      kvRequestId: kvRequestIdOf("a1-7", 0),
    });
    expect(r.named).toBe(true);
    expect(headers[HEADER_KV_SOURCE]).toBe("10.0.0.7:8002");
    const text = dec.decode(r.body);
    expect(text.endsWith('"model":"m","prompt":[1,2,3],"seed":12345678901234567890}')).toBe(true);
    expect(parseRemoteKvSource(JSON.parse(text))).toEqual({
      kvRequestId: "a1-7-0",
      host: "10.0.0.7",
      port: 8002,
    });
  });

  test("the client's own header never passes; no source: the body as it was", () => {
    const body = enc.encode('{"model":"m"}');
    const headers: Record<string, string> = { "X-KV-Cache-Source-Host-Port": "evil:1" };
    const r = withKvSource(body, headers, undefined);
    expect(r.body).toBe(body);
    expect(Object.keys(headers)).toEqual([]);
  });

  test("a body with kv_transfer_params of its own (a P/D half) is left alone", () => {
    const body = enc.encode('{"kv_transfer_params":{"do_remote_decode":true}}');
    const headers: Record<string, string> = {};
    const r = withKvSource(body, headers, { url: "http://h:1", kvRequestId: "x" });
    expect(r.named).toBe(false);
    expect(r.body).toBe(body);
    expect(headers[HEADER_KV_SOURCE]).toBeUndefined();
  });

  test("an empty object, IPv6 and default ports", () => {
    const r = withKvSource(enc.encode("{ }"), {}, { url: "http://[::1]:9000", kvRequestId: "x" });
    expect(JSON.parse(dec.decode(r.body)).kv_transfer_params.remote_kv_source).toEqual({
      kv_request_id: "x",
      remote_host: "::1",
      remote_port: 9000,
    });
    expect(hostPortOf("https://engine")).toEqual({ host: "engine", port: 443 });
    expect(kvRequestIdOf("a_b.c", 2)).toBe("a-b-c-2");
  });
});
