import { Agent, request } from 'node:http';

/**
 * Which ETag a server answers `HEAD /reviews.json` with (identity coding unless `coding` names
 * another), over a kept-alive
 * connection from `agent`. node:http rather than fetch: fetch (undici) cost ~0.7-1.1 ms of CPU per
 * HEAD against ~0.1 ms, and a poll every 10 ms then put ~100 ms of CPU per second on the cores
 * the servers under test use: load the benchmark put on what it measures.
 */
export function servedEtag(agent: Agent, port: number, coding: 'identity' | 'br' = 'identity'): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/reviews.json', method: 'HEAD', agent, headers: { 'accept-encoding': coding }, timeout: 2_000 }, (res) => {
      res.resume();
      const etag = res.headers.etag;
      resolve(res.statusCode === 200 && typeof etag === 'string' ? etag : '');
    });
    req.once('timeout', () => req.destroy(new Error('HEAD /reviews.json timed out')));
    req.once('error', reject);
    req.end();
  });
}

/** One kept-alive connection per server polled. */
export function pollAgent(): Agent {
  return new Agent({ keepAlive: true, maxSockets: 1 });
}
