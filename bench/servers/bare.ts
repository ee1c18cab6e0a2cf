/**
 * The limit: bare node:http writing the same precomputed bytes the service serves, with only the
 * headers a client needs. Everything the service adds (conditional logic, CORS, Link, metrics) is
 * measured against this.
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { buildSnapshot, type Representation } from '@reviews/domain';

const file = process.env.DATASET_FILE ?? 'data/sample-dataset.json';
const built = buildSnapshot(JSON.parse(readFileSync(file, 'utf8')), {
  baseUrl: process.env.BASE_URL ?? 'http://localhost:8080',
  publishedAt: new Date(0),
});
if (!built.ok) throw new Error(`invalid dataset ${file}`);
const r = built.snapshot.representations;
const routes = new Map<string, Representation>([
  ['/reviews.json', r.reviews],
  ['/insights.json', r.insights],
  ['/api/feed.json', r.feedJson],
  ['/feed.xml', r.feedAtom],
  ['/.well-known/openapi.json', r.openapi],
]);

createServer((req, res) => {
  const rep = routes.get(req.url ?? '');
  if (!rep) {
    res.statusCode = 404;
    res.end();
    return;
  }
  const accept = req.headers['accept-encoding'] ?? '';
  const variant = (accept.includes('br') && rep.br) || (accept.includes('gzip') && rep.gzip) || rep.identity;
  if (req.headers['if-none-match'] === variant.etag) {
    res.writeHead(304, { ETag: variant.etag });
    res.end();
    return;
  }
  const headers: Record<string, string | number> = { 'Content-Type': rep.contentType, 'Content-Length': variant.body.length, ETag: variant.etag };
  if (variant.coding !== 'identity') headers['Content-Encoding'] = variant.coding;
  res.writeHead(200, headers);
  res.end(variant.body);
}).listen(Number(process.env.PORT), '127.0.0.1');
