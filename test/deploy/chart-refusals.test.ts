// What Kubernetes or the services would refuse later must already fail `helm template`, with a
// message naming the value to fix: the services' own configuration rules (EnvSchema in
// libs/runtime/src/config.ts), the shutdown budget of libs/runtime/src/service.ts, and fields the
// API server rejects. Everything here renders with the real Helm binary.
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ConfigError, loadConfig } from '@reviews/runtime';
import { chartDir, closeHooksFloorMs, ensureHelm, helm, KUBE_VERSION, parseManifests, type HelmResult, type K8sObject } from './support/chart.js';

type Values = Record<string, unknown>;

let helmBin = '';
let dir = '';
let renders = 0;

beforeAll(async () => {
  helmBin = await ensureHelm();
  dir = mkdtempSync(join(tmpdir(), 'chart-refusals-'));
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `values` over the one value the chart requires. */
async function template(values: Values): Promise<HelmResult> {
  const file = join(dir, `values-${++renders}.yaml`);
  writeFileSync(file, stringify({ baseUrl: 'https://reviews.example.com', ...values }));
  return helm(helmBin, ['template', 't', chartDir, '--kube-version', KUBE_VERSION, '-f', file]);
}

async function render(values: Values): Promise<K8sObject[]> {
  const result = await template(values);
  expect(result.stderr).toBe('');
  return parseManifests(result.stdout, stringify(values));
}

describe('WebSub values: the chart refuses exactly what the services refuse', () => {
  let renderedEnv: Record<string, string> = {};
  beforeAll(async () => {
    const objects = await render({});
    renderedEnv = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-config'))?.data ?? {};
  });

  /** What loadConfig says about the chart's environment with these websub values. */
  function servicesAccept(websub: Record<string, number | string>): boolean {
    const env = { ...renderedEnv };
    for (const [key, value] of Object.entries(websub)) env[`WEBSUB_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`] = String(value);
    try {
      loadConfig(env);
      return true;
    } catch (error) {
      if (error instanceof ConfigError) return false;
      throw error;
    }
  }

  it.each([
    ['refused', { leaseMaxSeconds: 86400 }, 'websub.leaseDefaultSeconds (864000) must lie between websub.leaseMinSeconds (3600) and websub.leaseMaxSeconds (86400)'],
    ['refused', { leaseDefaultSeconds: 3599 }, 'websub.leaseDefaultSeconds (3599) must lie between'],
    ['accepted', { leaseDefaultSeconds: 3600 }, ''],
    ['refused', { leaseDefaultSeconds: 864001 }, 'websub.leaseDefaultSeconds (864001) must lie between'],
    ['accepted', { leaseMinSeconds: 864000 }, ''],
    ['refused', { leaseMinSeconds: 7200, leaseMaxSeconds: 3600, leaseDefaultSeconds: 3600 }, 'websub.leaseMinSeconds (7200) must not exceed websub.leaseMaxSeconds (3600)'],
    ['accepted', { trustedProxyHops: 0 }, ''],
    ['accepted', { trustedProxyHops: 2 }, ''],
    ['refused', { trustedProxyHops: -1 }, 'websub.trustedProxyHops'],
    ['refused', { trustedProxyHops: 1.5 }, 'websub.trustedProxyHops'],
    ['refused', { leaseMinSeconds: 0, leaseDefaultSeconds: 3600 }, 'websub.leaseMinSeconds'],
    ['accepted', { retryDelaysMs: '0,1000,60000' }, ''],
    ['refused', { retryDelaysMs: '1000,' }, 'websub.retryDelaysMs'],
    ['refused', { retryDelaysMs: '1000,,2000' }, 'websub.retryDelaysMs'],
    ['refused', { retryDelaysMs: '1000, 2000' }, 'websub.retryDelaysMs'],
  ])('%s: %j', async (outcome, websub, message) => {
    expect(servicesAccept(websub)).toBe(outcome === 'accepted');
    const result = await template({ websub });
    expect(result.ok).toBe(outcome === 'accepted');
    expect(result.stderr).toContain(message);
  });
});

describe('shutdown budget', () => {
  /** Worst case from SIGTERM: the preStop sleep, the HTTP drain up to timeoutMs, then the close-hook floor. */
  const needed = (preStopSleepSeconds: number, timeoutMs: number): number => preStopSleepSeconds + Math.ceil((timeoutMs + closeHooksFloorMs) / 1000);

  it('reads the close-hook floor from the app', () => {
    expect(closeHooksFloorMs).toBeGreaterThan(0);
  });

  it.each([
    [5, 10_000],
    [5, 10_001],
    [1, 500],
  ])('preStop %i s + timeout %i ms: renders with exactly the grace period it needs, refuses one second less', async (preStopSleepSeconds, timeoutMs) => {
    const grace = needed(preStopSleepSeconds, timeoutMs);
    const enough = await template({ shutdown: { preStopSleepSeconds, timeoutMs, terminationGracePeriodSeconds: grace } });
    expect(enough.stderr).toBe('');
    const short = await template({ shutdown: { preStopSleepSeconds, timeoutMs, terminationGracePeriodSeconds: grace - 1 } });
    expect(short.ok).toBe(false);
    expect(short.stderr).toContain(`shutdown.terminationGracePeriodSeconds (${grace - 1}) must be at least`);
    expect(short.stderr).toContain(`(${grace})`);
  });

  it('refuses a 0 s preStop sleep (Kubernetes before 1.33 rejects it)', async () => {
    const result = await template({ shutdown: { preStopSleepSeconds: 0 } });
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain('shutdown.preStopSleepSeconds: Must be greater than or equal to 1');
  });
});

describe('what the API server would reject or what would block operations', () => {
  it('refuses an HPA whose minReplicas exceeds maxReplicas, only where the HPA is rendered', async () => {
    const autoscaling = { minReplicas: 5, maxReplicas: 3 };
    const on = await template({ services: { mcpGateway: { autoscaling: { ...autoscaling, enabled: true } } } });
    expect(on.ok).toBe(false);
    expect(on.stderr).toContain('services.mcpGateway.autoscaling.minReplicas (5) must not exceed services.mcpGateway.autoscaling.maxReplicas (3)');
    expect((await template({ services: { mcpGateway: { autoscaling } } })).ok).toBe(true);
  });

  it.each([
    [0, 'Must be greater than or equal to 1'],
    ['0%', 'Does not match pattern'],
  ])('refuses a PodDisruptionBudget maxUnavailable of %j (it would block every node drain)', async (maxUnavailable, message) => {
    const result = await template({ services: { readApi: { pdb: { maxUnavailable } } } });
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain(`services.readApi.pdb.maxUnavailable: ${message}`);
  });

  it.each([1, '25%', '100%'])('accepts a PodDisruptionBudget maxUnavailable of %j', async (maxUnavailable) => {
    const objects = await render({ services: { readApi: { pdb: { maxUnavailable } } } });
    expect(objects.find((o) => o.kind === 'PodDisruptionBudget' && o.metadata.name === 't-public-reviews-read-api')?.spec.maxUnavailable).toBe(maxUnavailable);
  });

  // Defaulted to reviews.example.com, an install without it rendered and served feeds, Link headers
  // and WebSub topics naming a host that is not the service.
  it.each([
    [{ baseUrl: '' }, 'baseUrl is required: the public URL clients reach the service at'],
    // A null deletes the key, and the schema names it.
    [{ baseUrl: null }, 'baseUrl is required'],
  ])('refuses to render without baseUrl (%j), naming it', async (values, message) => {
    const result = await template(values);
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain(message);
  });

  // The Prometheus Operator refuses such a ServiceMonitor: nothing is scraped, and with no `up` series nothing alerts.
  it.each([
    ['5s', '10s', false],
    ['1m', '61s', false],
    ['500ms', '1s', false],
    ['1m', '60s', true],
    ['30s', '10s', true],
    ['1h', '1m', true],
  ])('takes a ServiceMonitor interval of %s with a scrape timeout of %s only when the timeout is not longer (%s)', async (interval, scrapeTimeout, accepted) => {
    const result = await template({ metrics: { serviceMonitor: { enabled: true, interval, scrapeTimeout } } });
    expect(result.ok).toBe(accepted);
    if (!accepted) expect(result.stderr).toContain(`metrics.serviceMonitor.scrapeTimeout (${scrapeTimeout}) must not exceed metrics.serviceMonitor.interval (${interval})`);
  });

  it('refuses an empty list of websub callback ports', async () => {
    const result = await template({ networkPolicy: { websubCallbackPorts: [] } });
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain('networkPolicy.websubCallbackPorts: Array must have at least 1 items');
  });
});

describe('extra volumes', () => {
  const ca = { name: 'extra-ca', secret: { secretName: 'nats-ca' } };
  const caMount = { name: 'extra-ca', mountPath: '/etc/ssl/extra', readOnly: true };

  it('mounts them next to the chart’s own, per service and on the seed Job', async () => {
    const objects = await render({ services: { websubHub: { extraVolumes: [ca], extraVolumeMounts: [caMount] } }, seed: { extraVolumes: [ca], extraVolumeMounts: [caMount] } });
    const pods = objects.filter((o) => o.kind === 'Deployment' || o.kind === 'Job').map((o) => ({ component: o.metadata.labels?.['app.kubernetes.io/component'], spec: o.spec.template.spec }));
    for (const { component, spec } of pods) {
      const withCa = component === 'websub-hub' || component === 'seed';
      expect({ component, volumes: (spec.volumes as { name: string }[]).map((v) => v.name) }).toEqual({ component, volumes: withCa ? ['tmp', 'data', 'extra-ca'] : ['tmp', 'data'] });
      expect({ component, mounts: (spec.containers[0].volumeMounts as { mountPath: string }[]).map((m) => m.mountPath) }).toEqual({ component, mounts: withCa ? ['/tmp', '/app/.data', '/etc/ssl/extra'] : ['/tmp', '/app/.data'] });
    }
  });

  it.each([
    ['a mount of a volume nobody defined', { services: { readApi: { extraVolumeMounts: [caMount] } } }, 'services.readApi.extraVolumeMounts: volume "extra-ca" is not defined in services.readApi.extraVolumes'],
    ['a volume named like the chart’s own', { seed: { extraVolumes: [{ name: 'tmp', emptyDir: {} }] } }, 'seed.extraVolumes: the name "tmp" is taken by the chart\'s own volumes (tmp, data, nats-creds, nats-nkey, nats-tls); choose another'],
    ['a volume named like the chart’s NKey file', { services: { readApi: { extraVolumes: [{ name: 'nats-nkey', emptyDir: {} }] } } }, 'services.readApi.extraVolumes: the name "nats-nkey" is taken by the chart\'s own volumes'],
    ['a mount over the chart’s own', { services: { mcpGateway: { extraVolumes: [ca], extraVolumeMounts: [{ name: 'extra-ca', mountPath: '/app/.data' }] } } }, 'services.mcpGateway.extraVolumeMounts: /app/.data is already mounted by the chart'],
    ['a mount over the chart’s NKey file', { seed: { extraVolumes: [ca], extraVolumeMounts: [{ name: 'extra-ca', mountPath: '/etc/nats/nkey' }] } }, 'seed.extraVolumeMounts: /etc/nats/nkey is already mounted by the chart'],
    ['a mount without a path', { services: { readApi: { extraVolumes: [ca], extraVolumeMounts: [{ name: 'extra-ca' }] } } }, 'services.readApi.extraVolumeMounts.0: mountPath is required'],
  ])('refuses %s', async (_name, values, message) => {
    const result = await template(values);
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain(message);
  });
});

describe('NATS credentials', () => {
  it.each(['nats://user:s3cret@nats.nats:4222', 'nats://t0ken@nats.nats:4222'])('refuses them in nats.url (%s), which would land in a ConfigMap and in helm\'s output, naming nats.existingSecret', async (url) => {
    const result = await template({ nats: { url } });
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain('nats.url holds credentials');
    expect(result.stderr).toContain('nats.existingSecret');
    expect(result.stderr).not.toContain(url);
  });

  // The services refuse NATS_NKEY beside NATS_CREDS: every pod and the seed Job would exit at start.
  it('refuses nats.credsSecret and nats.nkeySecret together, as the services refuse NATS_CREDS and NATS_NKEY', async () => {
    expect(() => loadConfig({ NATS_URL: 'nats://nats:4222', NATS_CREDS: '/etc/nats/creds/user.creds', NATS_NKEY: '/etc/nats/nkey/user.nk' })).toThrow('set NATS_CREDS or NATS_NKEY, not both');
    const result = await template({ nats: { credsSecret: 'reviews-nats-creds', nkeySecret: 'reviews-nats-nkey' } });
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain('nats.credsSecret and nats.nkeySecret: set one, not both: a creds file carries its own NKey seed');
  });

  it('refuses a client certificate without its key in nats.tls', async () => {
    const result = await template({ nats: { tls: { existingSecret: 'reviews-nats-tls', keyKey: '' } } });
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain('nats.tls.certKey and nats.tls.keyKey name a client certificate and its key: set both, or empty both for a CA alone');
  });

  it('refuses a nats.tls Secret that names no file: it would leave a nats:// connection in plain text', async () => {
    const result = await template({ nats: { tls: { existingSecret: 'reviews-nats-tls', certKey: '', keyKey: '', caKey: '' } } });
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain('nats.tls.existingSecret names no file: set nats.tls.certKey and keyKey (a client certificate), nats.tls.caKey (a CA), or both');
  });

  it('takes the URL from the Secret named in nats.existingSecret, whatever nats.url holds', async () => {
    const objects = await render({ nats: { url: 'nats://unused@x:4222', existingSecret: 'reviews-nats' } });
    const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-config'))?.data ?? {};
    expect(config['NATS_URL']).toBeUndefined();
  });
});

// A platform team's audit: each rendered, then every pod hung at connect or exited at start.
describe('NATS URLs the pods could not use', () => {
  it.each([
    ['tls://nats.example.net:7422', 'nats.url names port 7422, but the NetworkPolicy opens egress to NATS on networkPolicy.natsPort (4222) only: set networkPolicy.natsPort to 7422'],
    ['nats://a.nats:4222,nats://b.nats:4223', 'nats.url names port 4223'],
    ['nats://a.nats:4222,tls://b.nats:4222', 'nats.url: the server URLs mix tls:// with other schemes'],
  ])('refuses %s', async (url, message) => {
    const result = await template({ nats: { url } });
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain(message);
  });

  it.each([
    [{ nats: { url: 'tls://nats.example.net:7422' }, networkPolicy: { natsPort: 7422 } }],
    [{ nats: { url: 'tls://nats.example.net:7422' }, networkPolicy: { enabled: false } }],
    [{ nats: { url: 'nats://a.nats,nats://b.nats:4222/' } }],
    [{ nats: { url: 'tls://a.nats:4222,TLS://b.nats:4222' } }],
  ])('renders %j', async (values) => {
    expect((await template(values)).ok).toBe(true);
  });
});

describe('baseUrl', () => {
  it.each(['https://reviews.example.com?x=1', 'https://reviews.example.com/#top', 'https://user:pw@reviews.example.com'])('refuses %s, as the services do', async (baseUrl) => {
    const result = await template({ baseUrl });
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain('baseUrl: Does not match pattern');
    expect(() => loadConfig({ BASE_URL: baseUrl })).toThrow(ConfigError);
  });
});

describe('otel.samplerRatio', () => {
  // helm --set passes 0.5 as a string: the documented `--set otel.samplerRatio=0.5` was refused.
  it.each([0.5, '0.5', '.25', '1', 0])('takes %j, as --set and a values file give it', async (samplerRatio) => {
    const objects = await render({ otel: { enabled: true, endpoint: 'http://otel-collector.monitoring:4318', samplerRatio } });
    const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-config'))?.data ?? {};
    expect(Number(config['OTEL_TRACES_SAMPLER_ARG'])).toBe(Number(samplerRatio));
  });

  it.each([1.5, '1.5', 'half', ''])('refuses %j', async (samplerRatio) => {
    expect((await template({ otel: { enabled: true, endpoint: 'http://otel-collector.monitoring:4318', samplerRatio } })).stderr).toContain('otel.samplerRatio');
  });
});

describe('image.tag', () => {
  /** `helm template` with this YAML for image.tag, as written in a values file. */
  async function templateTag(tag: string): Promise<HelmResult> {
    const file = join(dir, `values-${++renders}.yaml`);
    writeFileSync(file, `baseUrl: https://reviews.example.com\nimage:\n  tag: ${tag}\n`);
    return helm(helmBin, ['template', 't', chartDir, '--kube-version', KUBE_VERSION, '-f', file]);
  }

  // Helm reads a values file's numbers as YAML numbers, floats: a review rendered 0123456 (a short SHA) as the
  // image 42798, 1e3 as 1000 and 12345678901234567 as 12345678901234568, each an image nobody pushed.
  it.each(['0123456', '1e3', '0x1f', '12345678901234567', '20261128'])('refuses a tag written as the number %s in a values file, and takes it quoted', async (tag) => {
    const number = await templateTag(tag);
    expect(number.ok).toBe(false);
    expect(number.stderr).toContain('image.tag: ');
    expect(number.stderr).toContain('write it quoted, as a string');
    const quoted = parseManifests((await templateTag(`"${tag}"`)).stdout, 'quoted tag');
    expect(new Set(quoted.map((o) => o.metadata.labels?.['app.kubernetes.io/version']))).toEqual(new Set([tag]));
  });

  it('refuses a retry delay written as a number with --set-json, as in a values file', async () => {
    const result = await helm(helmBin, ['template', 't', chartDir, '--kube-version', KUBE_VERSION, '--set', 'baseUrl=https://reviews.example.com', '--set-json', 'websub.retryDelaysMs=600']);
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain('websub.retryDelaysMs: ');
    expect(result.stderr).toContain('write it quoted, as a string');
  });
});

describe('names the API server refuses', () => {
  it.each(['https://Reviews.Example.com', 'https://10.1.2.3', 'https://[2001:db8::1]'])('refuses baseUrl %s as the Ingress host, naming ingress.hosts', async (baseUrl) => {
    const result = await template({ baseUrl });
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain('is no lower-case DNS name');
    expect(result.stderr).toContain('ingress.hosts');
  });

  it('takes such a baseUrl with ingress.hosts set, or without an Ingress', async () => {
    expect((await template({ baseUrl: 'https://10.1.2.3', ingress: { hosts: ['reviews.example.com'] } })).ok).toBe(true);
    expect((await template({ baseUrl: 'https://10.1.2.3', ingress: { enabled: false } })).ok).toBe(true);
  });

  it('names the objects of a release with dots in its name with hyphens (a Service name takes no dot)', async () => {
    const file = join(dir, `values-${++renders}.yaml`);
    writeFileSync(file, stringify({ baseUrl: 'https://reviews.example.com' }));
    const result = await helm(helmBin, ['template', 'reviews.prod', chartDir, '--kube-version', KUBE_VERSION, '-f', file]);
    const names = parseManifests(result.stdout, 'dotted release').map((o) => o.metadata.name);
    expect(names).toContain('reviews-prod-public-reviews-read-api');
    expect(names.filter((name) => name.includes('.'))).toEqual([]);
  });

  it.each([{ nameOverride: 'Reviews' }, { fullnameOverride: 'reviews.prod' }])('refuses %j', async (values) => {
    expect((await template(values)).stderr).toContain('Does not match pattern');
  });
});

describe('otel.endpoint', () => {
  // Without a scheme it rendered, and the exporter sent nothing while the NetworkPolicy opened port 80.
  it.each(['otel-collector.monitoring:4318', 'grpc://otel-collector.monitoring:4317', 'http://', 'http://otel-collector.monitoring:4318 '])('refuses %j, naming it', async (endpoint) => {
    const result = await template({ otel: { enabled: true, endpoint } });
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain('otel.endpoint: Does not match pattern');
  });

  it.each(['http://otel-collector.monitoring:4318', 'https://otlp.example.com/otlp'])('takes %s', async (endpoint) => {
    const objects = await render({ otel: { enabled: true, endpoint } });
    expect(objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-config'))?.data?.['OTEL_EXPORTER_OTLP_ENDPOINT']).toBe(endpoint);
  });
});

describe('OTLP egress', () => {
  /** The ports the release's default NetworkPolicy opens to the OTLP collector for this endpoint. */
  async function otlpPorts(endpoint: string): Promise<number[]> {
    const objects = await render({ otel: { enabled: true, endpoint } });
    const policy = objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name.endsWith('-default'));
    const egress = (policy?.spec as { egress: { to?: unknown[]; ports: { port: number }[] }[] }).egress;
    return (egress[2]?.ports ?? []).map((p) => p.port);
  }

  // A platform team's audit: a collector behind https on 443 was blocked, and tracing went silent.
  it.each([
    ['http://otel-collector.monitoring:4318', [4317, 4318]],
    ['https://otlp.example.com', [4317, 4318, 443]],
    ['http://collector:9999', [4317, 4318, 9999]],
  ])('opens the port %s names as well as 4317 and 4318', async (endpoint, ports) => {
    expect(await otlpPorts(endpoint)).toEqual(ports);
  });
});
