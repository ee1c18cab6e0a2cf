import { chmodSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Representation } from '@reviews/domain';
import { startProcess, type Running } from './processes.ts';

export const NGINX = '/usr/sbin/nginx';
export const nginxAvailable = () => existsSync(NGINX);

/**
 * The anchor: Debian's nginx serving the same identity and gzip bytes from disk with gzip_static,
 * one worker process, like the Node server under test.
 */
export function startNginx(port: number, files: Record<string, Representation>): Running {
  const root = mkdtempSync(join(tmpdir(), 'bench-nginx-'));
  // nginx workers run as an unprivileged user; mkdtemp's 0700 would make every file a 403.
  chmodSync(root, 0o755);
  for (const [path, rep] of Object.entries(files)) {
    const target = join(root, 'www', path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, rep.identity.body);
    if (rep.gzip) writeFileSync(`${target}.gz`, rep.gzip.body);
  }
  const conf = join(root, 'nginx.conf');
  writeFileSync(
    conf,
    `daemon off;
worker_processes 1;
pid ${root}/nginx.pid;
error_log ${root}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${root}/tmp;
  types { application/json json; application/atom+xml xml; }
  default_type application/octet-stream;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  gzip_static on;
  server {
    listen 127.0.0.1:${port};
    root ${root}/www;
  }
}
`,
  );
  return startProcess(['-c', conf, '-p', root], {}, port, { command: NGINX });
}
