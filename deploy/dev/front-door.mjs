// Tilt's stand-in for the chart's Ingress: one origin, values-dev.yaml's baseUrl, routing by path as
// the Ingress does (`/mcp` and `/api/websub/hub` exactly, everything else to read-api). The services
// advertise URLs on that origin (the hub in Link headers and feeds, MCP resources), which the three
// port-forwards alone did not answer: the hub URL led to read-api's 404.
// Usage: node deploy/dev/front-door.mjs LISTEN_PORT READ_API_PORT MCP_GATEWAY_PORT WEBSUB_HUB_PORT
import { createServer, request } from 'node:http';

const [listen, readApi, mcpGateway, websubHub] = process.argv.slice(2).map(Number);
if (![listen, readApi, mcpGateway, websubHub].every((port) => Number.isInteger(port) && port > 0)) {
  process.stderr.write('usage: node deploy/dev/front-door.mjs LISTEN_PORT READ_API_PORT MCP_GATEWAY_PORT WEBSUB_HUB_PORT\n');
  process.exit(2);
}
const exactPaths = new Map([
  ['/mcp', mcpGateway],
  ['/api/websub/hub', websubHub],
]);

const server = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  const port = exactPaths.get(path) ?? readApi;
  const upstream = request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
    answer.pipe(res);
  });
  upstream.on('error', (error) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(`front door: nothing answers on 127.0.0.1:${port} (${error.message}); is its port-forward up?\n`);
  });
  req.pipe(upstream);
});
server.listen(listen, '127.0.0.1', () => process.stdout.write(`front door on http://localhost:${listen}: /mcp -> ${mcpGateway}, /api/websub/hub -> ${websubHub}, the rest -> ${readApi}\n`));
