// mcp-gateway reads the MCP session key when a pod starts. A key changed under running pods (the
// generated Secret deleted to rotate it, then `helm upgrade`) reached only pods started later, and each
// replica answered 404 to the sessions the others signed. Upgrades render here with the real Helm
// against a stand-in for the Kubernetes API that answers Helm's lookup with the Secret a release left
// (`helm template --dry-run=server`), as `helm upgrade` renders against the cluster.
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { chartDir, ensureHelm, helm, parseManifests, repoRoot, type K8sObject } from './support/chart.js';

const RELEASE = 't';
const SECRET = `${RELEASE}-public-reviews-mcp-session`;
const SECRET_KEY = 'mcp-session-secret';
const CHECKSUM = 'checksum/mcp-session';

let helmBin = '';
let dir = '';
let kubeconfig = '';
let server: Server;
/** The key (base64) in the Secret the stand-in API server holds; null: no such Secret. */
let storedKey: string | null = null;

beforeAll(async () => {
  helmBin = await ensureHelm();
  server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    const path = req.url?.split('?')[0];
    // Discovery, which Helm reads to know that secrets are a namespaced resource of v1.
    if (path === '/api/v1') {
      res.end(JSON.stringify({ kind: 'APIResourceList', groupVersion: 'v1', resources: [{ name: 'secrets', singularName: 'secret', namespaced: true, kind: 'Secret', verbs: ['get'] }] }));
    } else if (path === `/api/v1/namespaces/reviews/secrets/${SECRET}` && storedKey !== null) {
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: SECRET, namespace: 'reviews' }, type: 'Opaque', data: { [SECRET_KEY]: storedKey } }));
    } else {
      res.statusCode = 404;
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404 }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  dir = mkdtempSync(join(tmpdir(), 'chart-session-key-'));
  kubeconfig = join(dir, 'kubeconfig');
  const { port } = server.address() as AddressInfo;
  writeFileSync(
    kubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'stand-in', cluster: { server: `http://127.0.0.1:${port}` } }],
      users: [{ name: 'stand-in', user: {} }],
      contexts: [{ name: 'stand-in', context: { cluster: 'stand-in', user: 'stand-in', namespace: 'reviews' } }],
      'current-context': 'stand-in',
    }),
  );
}, 120_000);

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** `helm template` as install and upgrade render: against the stand-in cluster, or offline (lookup finds nothing). */
async function render(against: 'cluster' | 'nothing', ...set: string[]): Promise<K8sObject[]> {
  const args = ['template', RELEASE, chartDir, '--namespace', 'reviews', '--set', 'baseUrl=https://reviews.example.com', ...set.flatMap((s) => ['--set', s])];
  if (against === 'cluster') args.push('--dry-run=server', '--kubeconfig', kubeconfig);
  const result = await helm(helmBin, args);
  if (!result.ok) throw new Error(`helm ${args.join(' ')} failed:\n${result.stderr}`);
  return parseManifests(result.stdout, args.join(' '));
}

/** What each Deployment's pod template carries as the session key checksum, by component. */
function checksums(objects: K8sObject[]): Record<string, string | undefined> {
  return Object.fromEntries(
    objects.filter((o) => o.kind === 'Deployment').map((d) => [d.metadata.labels?.['app.kubernetes.io/component'], d.spec.template.metadata.annotations?.[CHECKSUM]]),
  );
}

function renderedKey(objects: K8sObject[]): string | undefined {
  return objects.find((o) => o.kind === 'Secret' && o.metadata.name === SECRET)?.data?.[SECRET_KEY];
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

describe('the generated MCP session key restarts mcp-gateway when it changes', () => {
  it('at install: only mcp-gateway pods carry a checksum, of the very key the Secret is created with', async () => {
    storedKey = null;
    const objects = await render('cluster');
    const key = renderedKey(objects)!;
    expect(checksums(objects)).toEqual({ 'read-api': undefined, 'mcp-gateway': sha256(key), 'websub-hub': undefined });
  });

  it('upgrades keeping the key keep the checksum (no restart); a key generated anew after the Secret is deleted changes it (every replica restarts onto it)', async () => {
    storedKey = Buffer.from('k'.repeat(48)).toString('base64');
    const upgrades = [await render('cluster'), await render('cluster')];
    for (const objects of upgrades) {
      expect(renderedKey(objects)).toBe(storedKey);
      expect(checksums(objects)['mcp-gateway']).toBe(sha256(storedKey));
    }

    storedKey = null;
    const rotated = await render('cluster');
    const newKey = renderedKey(rotated)!;
    expect(newKey).not.toBe(Buffer.from('k'.repeat(48)).toString('base64'));
    expect(checksums(rotated)['mcp-gateway']).toBe(sha256(newKey));
  });

  it('offline renders (helm template, Argo CD) generate a new key each time, and with it a new checksum, as docs/deploy.md warns', async () => {
    const [first, second] = [await render('nothing'), await render('nothing')];
    expect(renderedKey(first)).not.toBe(renderedKey(second));
    for (const objects of [first, second]) expect(checksums(objects)['mcp-gateway']).toBe(sha256(renderedKey(objects)!));
    const doc = readFileSync(join(repoRoot, 'docs/deploy.md'), 'utf8').replace(/\s+/g, ' ');
    expect(doc).toContain('also restarts the mcp-gateway pods on every render');
  });

  it('with mcp.session.existingSecret the chart cannot see the key: no checksum, and docs/deploy.md says to restart the gateway', async () => {
    const objects = await render('nothing', 'mcp.session.existingSecret=mine');
    expect(checksums(objects)).toEqual({ 'read-api': undefined, 'mcp-gateway': undefined, 'websub-hub': undefined });
    const doc = readFileSync(join(repoRoot, 'docs/deploy.md'), 'utf8').replace(/\s+/g, ' ');
    expect(doc).toContain('kubectl -n reviews rollout restart deployment/<fullname>-mcp-gateway');
  });
});
