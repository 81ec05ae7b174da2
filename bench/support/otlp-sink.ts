/**
 * An OTLP/HTTP collector stand-in for benches: reads each export whole and drops it, answering
 * 200 with an empty protobuf body as a collector does; counts exports and bytes.
 */
export interface OtlpSink {
  readonly url: string;
  exports(): number;
  bytes(): number;
  stop(): void;
}

export function startOtlpSink(): OtlpSink {
  let exports = 0;
  let bytes = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      bytes += (await req.arrayBuffer()).byteLength;
      exports++;
      return new Response(new Uint8Array(0), {
        headers: { "content-type": "application/x-protobuf" },
      });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    exports: () => exports,
    bytes: () => bytes,
    stop: () => server.stop(true),
  };
}
