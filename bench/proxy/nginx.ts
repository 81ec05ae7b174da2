/**
 * nginx as a plain reverse proxy in front of one engine, for comparison: a minimal config
 * in a temp dir (proxy_buffering off, keep-alive to the upstream, no access log), started
 * in the foreground on a free loopback port and stopped by PID.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, until } from "../../test/support/processes.ts";

export const NGINX = "/usr/sbin/nginx";

export interface Nginx {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export async function startNginx(upstream: string): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-nginx-"));
  const port = freePort();
  const up = new URL(upstream);
  const conf = `
worker_processes 1;
daemon off;
master_process off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream engine { server ${up.hostname}:${up.port}; keepalive 256; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://engine;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
`;
  writeFileSync(join(dir, "nginx.conf"), conf);
  const proc = Bun.spawn({
    cmd: [NGINX, "-p", dir, "-e", join(dir, "error.log"), "-c", join(dir, "nginx.conf")],
    stdout: "ignore",
    stderr: "pipe",
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    proc.kill("SIGTERM");
    await proc.exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(
      async () => {
        if (proc.exitCode !== null)
          throw new Error(
            `nginx exited with ${proc.exitCode}: ${await new Response(proc.stderr).text()}`,
          );
        return (await fetch(`${url}/health`)).ok;
      },
      "nginx to answer",
      10_000,
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return { url, pid: proc.pid, stop };
}
