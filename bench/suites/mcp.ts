import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadNote } from '../lib/machine.ts';
import { fmt, ratio, type Section } from '../lib/report.ts';
import { loadTest, DEFAULT_LOAD, type LoadResult } from '../lib/wrk.ts';
import { dataset, startService } from '../lib/context.ts';

const REVIEWS = 2_000;
const PROTOCOL_VERSION = '2025-06-18';
// A throw-away secret: sessions only have to survive this run.
const SESSION_SECRET = 'bench-session-secret-of-at-least-32-characters';
const MCP_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': PROTOCOL_VERSION };

/** The same search as REST query string and as search_reviews arguments. */
const QUERIES: { name: string; rest: string; args: Record<string, string | number> }[] = [
  { name: 'text query, 10 results', rest: 'query=compassion&limit=10', args: { query: 'compassion', limit: 10 } },
  { name: '5-star since a date, 20 results', rest: 'rating=5&since=2025-01-01&limit=20', args: { rating: 5, since: '2025-01-01', limit: 20 } },
];

/** `initialize` over raw HTTP: the gateway answers with a signed Mcp-Session-Id. */
async function openSession(mcpUrl: string): Promise<string> {
  const res = await fetch(mcpUrl, {
    method: 'POST',
    headers: MCP_HEADERS,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'bench', version: '1.0.0' } } }),
  });
  await res.arrayBuffer();
  const session = res.headers.get('mcp-session-id');
  if (res.status !== 200 || !session) throw new Error(`initialize answered ${res.status} without a session id`);
  return session;
}

function toolCall(args: Record<string, string | number>): string {
  return JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search_reviews', arguments: args } });
}

/** Proves the call under load is a successful search returning the same body as REST, before measuring it. */
async function checkParity(mcpUrl: string, headers: Record<string, string>, restUrl: string, args: Record<string, string | number>): Promise<number> {
  const mcp = (await (await fetch(mcpUrl, { method: 'POST', headers, body: toolCall(args) })).json()) as { result?: { isError?: boolean; structuredContent?: unknown } };
  const rest = (await (await fetch(restUrl)).json()) as { returned?: number };
  if (!mcp.result || mcp.result.isError) throw new Error(`search_reviews failed: ${JSON.stringify(mcp).slice(0, 300)}`);
  if (JSON.stringify(mcp.result.structuredContent) !== JSON.stringify(rest)) throw new Error(`search_reviews and REST disagree for ${JSON.stringify(args)}`);
  return rest.returned ?? 0;
}

/**
 * What the client sends: nothing, as wrk does, or what SDK clients send (fetch adds `gzip, deflate`),
 * which the gateway answers gzipped once its memoized result is compressed.
 */
const ENCODINGS: { name: string; headers: Record<string, string>; key: string }[] = [
  { name: 'none', headers: {}, key: '' },
  { name: 'gzip, deflate', headers: { 'Accept-Encoding': 'gzip, deflate' }, key: 'gzip.' },
];

/** Polls (bounded) until the gateway answers `body` gzipped: it compresses a memoized result off the request, after the first asks. */
async function awaitGzipAnswers(mcpUrl: string, headers: Record<string, string>, body: string): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const res = await fetch(mcpUrl, { method: 'POST', headers: { ...headers, 'Accept-Encoding': 'gzip, deflate' }, body });
    await res.arrayBuffer();
    if (res.headers.get('content-encoding') === 'gzip') return Number(res.headers.get('content-length'));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('the gateway never answered the search gzipped');
}

/** Bytes of one answer as sent (its Content-Length: fetch decodes the body), with `headers`' Accept-Encoding or none. */
async function answerBytes(url: string, init: { method?: string; body?: string; headers: Record<string, string> }): Promise<number> {
  // fetch adds `gzip, deflate` to a request without Accept-Encoding; identity stands for wrk's none.
  const res = await fetch(url, { ...init, headers: { 'Accept-Encoding': 'identity', ...init.headers } });
  await res.arrayBuffer();
  return Number(res.headers.get('content-length'));
}

/** wrk sends every request as this POST; the JSON goes in a Lua long string, so it needs no escaping. */
function postScript(dir: string, body: string): string {
  const file = join(dir, `post-${Math.random().toString(36).slice(2)}.lua`);
  writeFileSync(file, `wrk.method = "POST"\nwrk.body = [==[${body}]==]\n`);
  return file;
}

/** tools/call search_reviews on the mcp-gateway against GET /api/reviews/search on read-api, one process each, same wrk settings. */
export async function mcpThroughput(): Promise<Section> {
  const load = loadNote();
  const file = dataset(REVIEWS, 11);
  const scripts = mkdtempSync(join(tmpdir(), 'bench-mcp-'));
  const restService = await startService('services/read-api/dist/main.js', { DATASET_FILE: file });
  // The bench is one client at full speed: past any per-client limit.
  const gateway = await startService('services/mcp-gateway/dist/main.js', { DATASET_FILE: file, MCP_SESSION_SECRET: SESSION_SECRET, MCP_RATE_LIMIT_PER_MINUTE: '0' });
  const rows: (string | number)[][] = [];
  const figures: Record<string, number> = {};
  try {
    const mcpUrl = `http://127.0.0.1:${gateway.port}/mcp`;
    const headers = { ...MCP_HEADERS, 'Mcp-Session-Id': await openSession(mcpUrl) };
    for (const [i, query] of QUERIES.entries()) {
      const restUrl = `http://127.0.0.1:${restService.port}/api/reviews/search?${query.rest}`;
      const returned = await checkParity(mcpUrl, headers, restUrl, query.args);
      const script = postScript(scripts, toolCall(query.args));
      for (const encoding of ENCODINGS) {
        const mcpBytes = encoding.key === '' ? await answerBytes(mcpUrl, { method: 'POST', headers, body: toolCall(query.args) }) : await awaitGzipAnswers(mcpUrl, headers, toolCall(query.args));
        const restBytes = await answerBytes(restUrl, { headers: encoding.headers });
        const rest: LoadResult = await loadTest(restUrl, { ...DEFAULT_LOAD, headers: encoding.headers });
        const mcp: LoadResult = await loadTest(mcpUrl, { ...DEFAULT_LOAD, headers: { ...headers, ...encoding.headers }, script });
        for (const [side, r] of [['REST', rest], ['MCP', mcp]] as const) {
          if (r.non2xx3xx || r.errors) throw new Error(`${side} ${query.name}: ${r.non2xx3xx} non-2xx answers, ${r.errors} socket errors under load`);
        }
        rows.push([query.name, encoding.name, returned, `${fmt(restBytes)} / ${fmt(mcpBytes)}`, fmt(rest.requestsPerSecond), fmt(mcp.requestsPerSecond), ratio(mcp.requestsPerSecond, rest.requestsPerSecond), fmt(rest.p99Ms, 2), fmt(mcp.p99Ms, 2)]);
        const prefix = `q${i + 1}.${encoding.key}`;
        figures[`${prefix}rest_rps`] = Math.round(rest.requestsPerSecond);
        figures[`${prefix}mcp_rps`] = Math.round(mcp.requestsPerSecond);
        figures[`${prefix}mcp_vs_rest_pct`] = Math.round((mcp.requestsPerSecond / rest.requestsPerSecond) * 100);
        figures[`${prefix}mcp_p99_ms`] = Number(mcp.p99Ms.toFixed(2));
      }
    }
  } finally {
    await Promise.all([restService.stop(), gateway.stop()]);
    rmSync(scripts, { recursive: true, force: true });
  }
  return {
    id: 'mcp',
    title: 'MCP search_reviews against REST search (one core each)',
    intro:
      `\`tools/call search_reviews\` on the mcp-gateway (\`services/mcp-gateway/dist/main.js\`, one signed session from \`initialize\`, protocol ${PROTOCOL_VERSION}, JSON responses) ` +
      `against \`GET /api/reviews/search\` on read-api (\`services/read-api/dist/main.js\`) for the same search over the same ${fmt(REVIEWS)}-review dataset, ` +
      'each server one process, identical wrk settings (the MCP side POSTs its JSON-RPC body from a Lua script). Before loading, the suite checks that both answer the same body. ' +
      'These calls take the gateway\'s tools/call fast path (ADR 0008: node:http, result memoized per dataset version, byte-identical to the SDK path that builds an McpServer per request); read-api memoizes search results per dataset version too, so both figures are the cached path. ' +
      'Each search runs twice: without `Accept-Encoding`, as wrk sends, and with `gzip, deflate`, as SDK clients send (fetch adds it), where read-api sends its gzip variant and the gateway its memoized result gzipped once, with the request id appended as a stored block (README, MCP); the suite waits for that gzip to be made before loading. Bytes are one answer\'s Content-Length.' +
      ` ${load}`,
    targets: ['MCP search_reviews throughput ≥ 50% of the REST search figure for the same query'],
    commands: [
      'npm run bench -- mcp',
      `wrk -t1 -c${DEFAULT_LOAD.connections} -d${DEFAULT_LOAD.durationSeconds}s --latency 'http://127.0.0.1:<read-api>/api/reviews/search?${QUERIES[0]!.rest}'`,
      `wrk -t1 -c${DEFAULT_LOAD.connections} -d${DEFAULT_LOAD.durationSeconds}s --latency -s post.lua -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: ${PROTOCOL_VERSION}' -H 'Mcp-Session-Id: <from initialize>' http://127.0.0.1:<gateway>/mcp`,
      "the same two with -H 'Accept-Encoding: gzip, deflate'",
    ],
    tables: [{ columns: ['search', 'Accept-Encoding', 'reviews returned', 'bytes REST / MCP', 'REST req/s', 'MCP req/s', 'MCP/REST', 'REST p99 ms', 'MCP p99 ms'], rows }],
    figures,
  };
}
