// Tilt is not available offline: the Tiltfile is checked as Starlark syntax (Python's parser), and
// every path, image target, workload and npm script it names must exist in the repository.
import { describe, it, expect, beforeAll } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { chartDir, COMPONENTS, ensureHelm, helm, npmScripts, parseManifests, renderChart, repoRoot, type K8sObject } from './support/chart.js';

const TILTFILE = join(repoRoot, 'Tiltfile');
const text = readFileSync(TILTFILE, 'utf8');

/** Parses with Python's ast (Starlark is a Python subset) and returns every string literal. */
function stringLiterals(): string[] {
  const script = 'import ast, json, sys\ntree = ast.parse(open(sys.argv[1]).read(), sys.argv[1])\nprint(json.dumps([n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]))';
  return JSON.parse(execFileSync('python3', ['-c', script, TILTFILE], { encoding: 'utf8' })) as string[];
}

const literal = (name: string): string => new RegExp(`^${name} = '([^']+)'`, 'm').exec(text)?.[1] ?? '';

describe('Tiltfile', () => {
  const strings = stringLiterals();

  it('names only paths that exist', () => {
    const paths = strings
      .flatMap((s) => s.split(/\s+/))
      .filter((t) => t !== '' && !t.includes(':') && !t.startsWith('/') && !t.startsWith('-') && (t.includes('/') || /\.(json|ya?ml)$/.test(t)));
    expect(paths.length).toBeGreaterThan(10);
    expect(paths.filter((p) => !existsSync(join(repoRoot, p)))).toEqual([]);
  });

  it('live-syncs every workspace', () => {
    const workspaces = ['libs', 'services'].flatMap((g) => readdirSync(join(repoRoot, g)).map((n) => `${g}/${n}`)).filter((ws) => existsSync(join(repoRoot, ws, 'package.json')));
    expect(strings.filter((s) => /^(libs|services)\/[^/]+$/.test(s)).sort()).toEqual(workspaces.sort());
  });

  it('builds a target that exists in the Dockerfile', () => {
    const target = /target='([^']+)'/.exec(text)?.[1];
    expect(readFileSync(join(repoRoot, 'deploy/docker/Dockerfile'), 'utf8')).toMatch(new RegExp(`^FROM .* AS ${target}$`, 'm'));
  });

  it('runs npm scripts that exist', () => {
    const used = strings.flatMap((s) => [...s.matchAll(/npm (?:run )?([\w:-]+)/g)].map((m) => m[1] ?? ''));
    expect(used.length).toBeGreaterThan(0);
    expect(used.filter((s) => !(s in npmScripts))).toEqual([]);
  });

  it('creates the fixed dev MCP session Secret that values-dev.yaml names', () => {
    const values = parse(readFileSync(join(chartDir, 'values-dev.yaml'), 'utf8')) as { mcp: { session: { existingSecret: string } } };
    const manifest = strings.find((s) => /^kind: Secret$/m.test(s)) ?? '';
    const [secret] = parseManifests(manifest, 'Tiltfile blob');
    expect(secret?.metadata.name).toBe(values.mcp.session.existingSecret);
    // The chart's default key name; the gateway refuses keys under 32 characters.
    expect((secret as { stringData?: Record<string, string> } | undefined)?.stringData?.['mcp-session-secret']?.length).toBeGreaterThanOrEqual(32);
  });

  describe('workloads', () => {
    const release = literal('RELEASE');
    let chart: K8sObject[] = [];
    beforeAll(async () => {
      chart = await renderChart(await ensureHelm(), ['values-dev.yaml'], release);
    }, 120_000);

    it('renders the same chart on every render: no generated MCP session Secret', () => {
      expect(chart.filter((o) => o.kind === 'Secret')).toEqual([]);
    });

    it('configures resources for workloads the chart and the dev NATS manifest really create', () => {
      const nats = parseManifests(readFileSync(join(repoRoot, 'deploy/dev/nats.yaml'), 'utf8'), 'nats');
      const workloads = new Set([...chart, ...nats].filter((o) => o.kind === 'Deployment').map((o) => o.metadata.name));
      const services = [...text.matchAll(/\('([a-z-]+)', \d+\)/g)].map((m) => m[1] ?? '');
      expect(services.sort()).toEqual(Object.keys(COMPONENTS).sort());
      const configured = [...[...text.matchAll(/k8s_resource\(\s*'([^']+)'/g)].map((m) => m[1] ?? ''), ...services.map((c) => `${release}-${c}`)];
      expect(configured.filter((name) => !workloads.has(name))).toEqual([]);
    });
  });
});

// Tilt's helm() runs `helm template` without --kube-version, which renders for the Kubernetes version of
// the client libraries Helm 3.x was built with, 1.(x+15), and fails on a chart whose kubeVersion that
// misses. deploy.md asked for Helm 3 alone, and Helm before 3.15 refused the chart.
describe('the Helm on the PATH for Tilt', () => {
  const kubeMinorOfHelm3 = (helmMinor: number): number => helmMinor + 15;

  it('is named in deploy.md as the first Helm 3 whose default Kubernetes version the chart takes', () => {
    const [, major, minor] = /Helm (\d+)\.(\d+) or later\s+on the PATH/.exec(readFileSync(join(repoRoot, 'docs/deploy.md'), 'utf8')) ?? [];
    const chartKubeMinor = Number(/^kubeVersion: ">=1\.(\d+)\./m.exec(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8'))?.[1]);
    expect(major).toBe('3');
    expect(kubeMinorOfHelm3(Number(minor))).toBe(chartKubeMinor);
  });

  it('renders for Kubernetes 1.(x+15) as Helm 3.x, as the pinned Helm deploy.md offers does, and renders the chart as Tilt does', async () => {
    const helmBin = await ensureHelm();
    const version = (await helm(helmBin, ['version', '--template', '{{.Version}}'])).stdout;
    expect(readFileSync(join(repoRoot, 'docs/deploy.md'), 'utf8')).toContain(`pinned Helm ${version} that \`scripts/ensure-helm.sh\` fetches`);
    const helmMinor = Number(/^v3\.(\d+)\./.exec(version)?.[1]);
    const probe = mkdtempSync(join(tmpdir(), 'helm-kube-version-'));
    try {
      mkdirSync(join(probe, 'templates'));
      writeFileSync(join(probe, 'Chart.yaml'), 'apiVersion: v2\nname: probe\nversion: 0.1.0\n');
      writeFileSync(join(probe, 'templates/kube.yaml'), 'kubeMinor: "{{ .Capabilities.KubeVersion.Minor }}"\n');
      const rendered = (await helm(helmBin, ['template', 'probe', probe])).stdout;
      expect(Number(/kubeMinor: "(\d+)"/.exec(rendered)?.[1])).toBe(kubeMinorOfHelm3(helmMinor));
    } finally {
      rmSync(probe, { recursive: true, force: true });
    }
    const tilt = await helm(helmBin, ['template', literal('RELEASE'), chartDir, '-f', join(chartDir, 'values-dev.yaml')]);
    expect(tilt.stderr).toBe('');
  });
});
