// The Helm chart, rendered offline with the pinned Helm for every CI value set, then checked
// against the Kubernetes schemas and the deployment policy (issue "Kubernetes delivery").
import { describe, it, expect, beforeAll } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { EnvSchema, loadConfig } from '@reviews/runtime';
import { chartDir, closeHooksFloorMs, COMPONENTS, ensureHelm, helm, npmScripts, parseManifests, renderChart, repoRoot, selects, validateObject, type Component, type K8sObject } from './support/chart.js';
import { unknownFields } from './support/unknown-fields.js';

const VALUE_SETS = readdirSync(join(chartDir, 'ci')).filter((f) => f.endsWith('.yaml')).sort();
const DEV_VALUES = 'values-dev.yaml';

let helmBin = '';
const rendered = new Map<string, K8sObject[]>();

beforeAll(async () => {
  helmBin = await ensureHelm();
  for (const file of [...VALUE_SETS.map((f) => `ci/${f}`), DEV_VALUES]) rendered.set(file, await renderChart(helmBin, [file]));
}, 180_000);

const set = (file: string): K8sObject[] => rendered.get(file) ?? [];
const ofKind = (objects: K8sObject[], kind: string): K8sObject[] => objects.filter((o) => o.kind === kind);
const named = (objects: K8sObject[], kind: string, name: string): K8sObject | undefined => objects.find((o) => o.kind === kind && o.metadata.name === name);
const componentOf = (o: K8sObject): Component => o.metadata.labels?.['app.kubernetes.io/component'] as Component;
const podSpecs = (objects: K8sObject[]) => [...ofKind(objects, 'Deployment'), ...ofKind(objects, 'Job')].map((o) => ({ owner: o, pod: o.spec.template }));

describe('helm lint --strict', () => {
  it.each([...VALUE_SETS.map((f) => `ci/${f}`), DEV_VALUES])('passes with %s', async (file) => {
    const result = await helm(helmBin, ['lint', '--strict', chartDir, '-f', join(chartDir, file), '--kube-version', '1.32.0']);
    expect(result.stderr + result.stdout).toContain('0 chart(s) failed');
    expect(result.ok).toBe(true);
  });
});

describe.each([...VALUE_SETS.map((f) => `ci/${f}`), DEV_VALUES])('rendered with %s', (file) => {
  it('is valid against the Kubernetes schemas, with no unknown kinds or fields', () => {
    expect(set(file).length).toBeGreaterThan(0);
    for (const object of set(file)) {
      validateObject(object);
      expect({ object: `${object.kind}/${object.metadata.name}`, unknown: unknownFields(object) ?? [] }).toEqual({ object: `${object.kind}/${object.metadata.name}`, unknown: [] });
    }
  });

  it('runs every container non-root, without privileges, with resources and a pinned image', () => {
    for (const { owner, pod } of podSpecs(set(file))) {
      const where = `${owner.kind}/${owner.metadata.name}`;
      expect({ where, ...pod.spec.securityContext }).toMatchObject({ where, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.spec.automountServiceAccountToken).toBe(false);
      for (const c of pod.spec.containers) {
        expect({ where, ...c.securityContext }).toMatchObject({ where, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
        if (file !== DEV_VALUES) expect({ where, ro: c.securityContext.readOnlyRootFilesystem }).toEqual({ where, ro: true });
        expect({ where, r: c.resources }).toMatchObject({ where, r: { requests: { cpu: expect.any(String), memory: expect.any(String) }, limits: { memory: expect.any(String) } } });
        expect(c.image).toMatch(/^[^:@]+(:[\w.-]+|@sha256:[a-f0-9]{64})$/);
        expect(c.image).not.toMatch(/:latest$/);
        // Everything the app writes goes to emptyDirs.
        const mounts = (c.volumeMounts as { mountPath: string }[]).map((m) => m.mountPath);
        expect(mounts).toEqual(expect.arrayContaining(['/tmp', '/app/.data']));
      }
    }
  });

  it('gives each service a Deployment whose selector matches its pods, with probes, drain and config checksum', () => {
    const deployments = ofKind(set(file), 'Deployment');
    expect(deployments.map(componentOf).sort()).toEqual(Object.keys(COMPONENTS).sort());
    for (const d of deployments) {
      const component = componentOf(d);
      const pod = d.spec.template;
      expect(selects(d.spec.selector.matchLabels, pod.metadata.labels)).toBe(true);
      expect(Object.keys(d.spec.selector.matchLabels).sort()).toEqual(['app.kubernetes.io/component', 'app.kubernetes.io/instance', 'app.kubernetes.io/name']);
      expect(pod.metadata.annotations['checksum/config']).toMatch(/^[a-f0-9]{64}$/);
      const [c] = pod.spec.containers;
      const portNames = (c.ports as { name: string }[]).map((p) => p.name);
      expect(portNames).toEqual(['http', 'metrics']);
      expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
      expect(c.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
      expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
      // The image's entry point is node; the args select the service exactly as `npm run start:<service>` does.
      expect(['node', ...c.args].join(' ')).toBe(/node .*$/.exec(npmScripts[`start:${component}`] ?? '')?.[0]);
      expect(c.args.at(-1)).toBe(`services/${component}/dist/main.js`);
      expect(existsSync(join(repoRoot, `services/${component}/src/main.ts`))).toBe(true);
      // SIGTERM comes after the preStop sleep; the app then drains HTTP within SHUTDOWN_TIMEOUT_MS and
      // leaves its close hooks at least the floor on top.
      const preStop = c.lifecycle.preStop.sleep.seconds as number;
      const shutdownMs = Number(named(set(file), 'ConfigMap', c.envFrom[0].configMapRef.name)?.data?.SHUTDOWN_TIMEOUT_MS);
      expect(preStop).toBeGreaterThanOrEqual(1);
      expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(preStop + (shutdownMs + closeHooksFloorMs) / 1000);
    }
  });

  it('exposes each Deployment through a Service whose ports exist on the pods', () => {
    const deployments = ofKind(set(file), 'Deployment');
    for (const svc of ofKind(set(file), 'Service')) {
      const targets = deployments.filter((d) => selects(svc.spec.selector, d.spec.template.metadata.labels));
      expect({ svc: svc.metadata.name, n: targets.length }).toEqual({ svc: svc.metadata.name, n: 1 });
      const podPorts = (targets[0]?.spec.template.spec.containers[0].ports as { name: string }[]).map((p) => p.name);
      for (const port of svc.spec.ports) expect(podPorts).toContain(port.targetPort);
    }
  });

  it('creates an HPA exactly for autoscaled services and then leaves replicas to it', () => {
    const hpas = ofKind(set(file), 'HorizontalPodAutoscaler');
    for (const d of ofKind(set(file), 'Deployment')) {
      const hpa = hpas.find((h) => h.spec.scaleTargetRef.name === d.metadata.name);
      expect({ d: d.metadata.name, replicasOmitted: d.spec.replicas === undefined }).toEqual({ d: d.metadata.name, replicasOmitted: hpa !== undefined });
    }
    for (const h of hpas) expect(named(set(file), 'Deployment', h.spec.scaleTargetRef.name)).toBeDefined();
  });

  it('creates a PodDisruptionBudget only where more than one replica can run', () => {
    const pdbs = ofKind(set(file), 'PodDisruptionBudget');
    for (const d of ofKind(set(file), 'Deployment')) {
      const scalable = d.spec.replicas === undefined || d.spec.replicas > 1;
      const matching = pdbs.filter((p) => selects(p.spec.selector.matchLabels, d.spec.template.metadata.labels));
      expect({ d: d.metadata.name, pdbs: matching.length }).toEqual({ d: d.metadata.name, pdbs: scalable ? 1 : 0 });
    }
    // A pod waiting for its dataset is unready: it must not hold a node drain.
    for (const pdb of pdbs) expect({ pdb: pdb.metadata.name, policy: pdb.spec.unhealthyPodEvictionPolicy }).toEqual({ pdb: pdb.metadata.name, policy: 'AlwaysAllow' });
  });

  it('rolls out without taking a serving pod down first, and scales down only after a stable window', () => {
    for (const d of ofKind(set(file), 'Deployment')) expect({ d: d.metadata.name, strategy: d.spec.strategy }).toEqual({ d: d.metadata.name, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: 0 } } });
    for (const h of ofKind(set(file), 'HorizontalPodAutoscaler')) expect(h.spec.behavior?.scaleDown?.stabilizationWindowSeconds).toBeGreaterThan(0);
  });

  it('sets an environment the services accept (their own loadConfig)', () => {
    for (const cm of ofKind(set(file), 'ConfigMap').filter((c) => c.metadata.name.endsWith('-config'))) {
      expect(() => loadConfig(cm.data)).not.toThrow();
    }
  });

  it('mounts the directory of NODE_EXTRA_CA_CERTS in every container that sets it', () => {
    for (const { owner, pod } of podSpecs(set(file))) {
      const volumes = new Set((pod.spec.volumes as { name: string }[]).map((v) => v.name));
      for (const c of pod.spec.containers) {
        const mounts = (c.volumeMounts ?? []) as { name: string; mountPath: string }[];
        for (const m of mounts) expect({ owner: owner.metadata.name, volume: m.name, defined: volumes.has(m.name) }).toEqual({ owner: owner.metadata.name, volume: m.name, defined: true });
        const caFile = ((c.env ?? []) as { name: string; value?: string }[]).find((e) => e.name === 'NODE_EXTRA_CA_CERTS')?.value;
        if (caFile === undefined) continue;
        expect({ owner: owner.metadata.name, caFile, mounted: mounts.some((m) => caFile.startsWith(`${m.mountPath}/`)) }).toEqual({ owner: owner.metadata.name, caFile, mounted: true });
      }
    }
  });

  it('sets only environment variables the services read', () => {
    const known = new Set(Object.keys(EnvSchema.shape));
    for (const cm of ofKind(set(file), 'ConfigMap').filter((c) => c.metadata.name.endsWith('-config'))) {
      for (const key of Object.keys(cm.data ?? {})) expect({ key, known: known.has(key) || key.startsWith('OTEL_') }).toEqual({ key, known: true });
    }
    // Set on the containers: secrets and files, and Node's own CA variable.
    for (const { pod } of podSpecs(set(file))) {
      for (const { name } of (pod.spec.containers[0].env ?? []) as { name: string }[]) {
        expect({ name, known: known.has(name) || name.startsWith('OTEL_') || name === 'NODE_EXTRA_CA_CERTS' }).toEqual({ name, known: true });
      }
    }
  });

  it('points ServiceMonitor endpoints at ports that exist on the selected Services', () => {
    for (const sm of ofKind(set(file), 'ServiceMonitor')) {
      const services = ofKind(set(file), 'Service').filter((s) => selects(sm.spec.selector.matchLabels, s.metadata.labels));
      expect(services.map(componentOf).sort()).toEqual(Object.keys(COMPONENTS).sort());
      for (const endpoint of sm.spec.endpoints) {
        // Dashboards and rules select on the app's own `service` label.
        expect(endpoint.honorLabels).toBe(true);
        for (const s of services) expect((s.spec.ports as { name: string }[]).map((p) => p.name)).toContain(endpoint.port);
      }
    }
  });

  it('routes the public paths exactly: /mcp, /api/websub/hub, everything else to read-api', () => {
    for (const ingress of ofKind(set(file), 'Ingress')) {
      for (const rule of ingress.spec.rules) {
        const routes = (rule.http.paths as { path: string; pathType: string; backend: { service: { name: string; port: { name: string } } } }[]).map((p) => {
          const svc = named(set(file), 'Service', p.backend.service.name);
          expect((svc?.spec.ports as { name: string }[]).map((x) => x.name)).toContain(p.backend.service.port.name);
          return `${p.pathType} ${p.path} -> ${svc ? componentOf(svc) : 'missing'}`;
        });
        expect(routes).toEqual(['Exact /mcp -> mcp-gateway', 'Exact /api/websub/hub -> websub-hub', 'Prefix / -> read-api']);
      }
    }
  });

  it('confines traffic with NetworkPolicies when enabled', () => {
    const policies = ofKind(set(file), 'NetworkPolicy');
    if (policies.length === 0) return;
    const defaultPolicy = policies.find((p) => p.metadata.name.endsWith('-default'));
    // The deny-by-default policy covers every pod of the release, the seed Job included.
    for (const { pod } of podSpecs(set(file))) expect(selects(defaultPolicy?.spec.podSelector.matchLabels, pod.metadata.labels)).toBe(true);
    const egressPorts = (defaultPolicy?.spec.egress as { ports: { port: number; protocol: string }[] }[]).flatMap((r) => r.ports.map((p) => `${p.port}/${p.protocol ?? 'TCP'}`));
    // DNS answers too large for UDP come over TCP.
    expect(egressPorts).toEqual(expect.arrayContaining(['53/UDP', '53/TCP', '4222/TCP']));
    expect(defaultPolicy?.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    for (const d of ofKind(set(file), 'Deployment')) {
      const own = policies.find((p) => p.metadata.name.endsWith(`-${componentOf(d)}`));
      expect(selects(own?.spec.podSelector.matchLabels, d.spec.template.metadata.labels)).toBe(true);
      expect((own?.spec.ingress as { ports: { port: string }[] }[]).map((r) => r.ports[0]?.port)).toEqual(['http', 'metrics']);
    }
    const hub = policies.find((p) => p.metadata.name.endsWith('-websub-hub'));
    // Without Egress among its types Kubernetes ignores the hub's egress rules, and the default policy blocks every callback.
    expect(hub?.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    const [hubEgress] = hub?.spec.egress ?? [];
    expect(hubEgress.ports.length).toBeGreaterThan(0);
    for (const port of hubEgress.ports) expect(port).toEqual({ port: expect.any(Number), protocol: 'TCP' });
    // Which addresses: hub-egress.test.ts holds them against the hub's own address policy.
    expect(hubEgress.to.map((peer: { ipBlock: { cidr: string } }) => peer.ipBlock.cidr)).toEqual(['0.0.0.0/0', '2000::/3']);
  });

  it('wires the MCP session secret into mcp-gateway only', () => {
    for (const d of ofKind(set(file), 'Deployment')) {
      const env = d.spec.template.spec.containers[0].env as { name: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }[];
      const ref = env.find((e) => e.name === 'MCP_SESSION_SECRET')?.valueFrom?.secretKeyRef;
      if (componentOf(d) !== 'mcp-gateway') {
        expect(ref).toBeUndefined();
        continue;
      }
      const existing = (parse(readFileSync(join(chartDir, file), 'utf8')) as { mcp?: { session?: { existingSecret?: string } } } | null)?.mcp?.session?.existingSecret;
      if (existing !== undefined) {
        // Someone else's Secret (for values-dev.yaml the Tiltfile's, checked in tiltfile.test.ts).
        expect(ref?.name).toBe(existing);
        expect(named(set(file), 'Secret', existing)).toBeUndefined();
        continue;
      }
      const secret = named(set(file), 'Secret', ref?.name ?? '');
      expect(Buffer.from(secret?.data?.[ref?.key ?? ''] ?? '', 'base64').toString().length).toBeGreaterThanOrEqual(32);
    }
  });
});

describe('value sets', () => {
  const deploymentsOf = (file: string) => ofKind(set(file), 'Deployment');

  it('defaults: two replicas each, ingress on the baseUrl host, network policies, a seed Job, no monitoring CRDs', () => {
    const objects = set('ci/defaults-values.yaml');
    expect(deploymentsOf('ci/defaults-values.yaml').map((d) => d.spec.replicas)).toEqual([2, 2, 2]);
    expect(ofKind(objects, 'Ingress')[0]?.spec.rules.map((r: { host: string }) => r.host)).toEqual(['reviews.example.com']);
    expect(ofKind(objects, 'NetworkPolicy')).toHaveLength(4);
    expect(ofKind(objects, 'ServiceMonitor')).toHaveLength(0);
    expect(ofKind(objects, 'Job')).toHaveLength(1);
  });

  it('the seed Job is no Helm hook: it runs alongside the Deployments, whose readiness waits for its dataset', () => {
    const [job] = ofKind(set('ci/defaults-values.yaml'), 'Job');
    const annotations = job?.metadata.annotations ?? {};
    // A post-install hook would wait for `--wait` to see ready pods, which wait for the seed.
    expect(Object.keys(annotations).filter((k) => k.startsWith('helm.sh/'))).toEqual([]);
    // A Job per revision: a pod template is immutable, and every upgrade runs the seed again.
    expect(job?.metadata.name).toBe('test-release-public-reviews-seed-1');
    // Argo CD (helm template, revision always 1) recreates it on each sync, alongside the manifests.
    expect(annotations).toEqual({ 'argocd.argoproj.io/hook': 'Sync', 'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation' });
    // The TTL controller would delete it behind Helm, Flux and Argo CD.
    expect(job?.spec.ttlSecondsAfterFinished).toBeUndefined();
    expect(job?.spec.template.spec.containers[0].envFrom).toEqual([{ configMapRef: { name: 'test-release-public-reviews-config' } }]);
  });

  it('the seed Job runs the same publish CLI as `npm run dataset:publish`, tracing preload included, only into an empty store', () => {
    const [job] = ofKind(set('ci/defaults-values.yaml'), 'Job');
    const command = /node (.*\.js)/.exec(npmScripts['dataset:publish'] ?? '')?.[1]?.split(' ') ?? [];
    const cli = command.at(-1);
    expect(command).toEqual(['--import', '@reviews/runtime/instrumentation', cli]);
    expect(job?.spec.template.spec.containers[0].args).toEqual([...command, '--if-empty', 'data/sample-dataset.json']);
    expect(existsSync(join(repoRoot, (cli ?? '').replace('/dist/', '/src/').replace(/\.js$/, '.ts')))).toBe(true);
    // Its span roots the publish -> rebuild -> notification trace: under a service name, not unknown_service:node.
    expect(job?.spec.template.spec.containers[0].env).toContainEqual({ name: 'OTEL_SERVICE_NAME', value: 'dataset-publisher' });
  });

  it('defaults: memory limits cover the peaks measured in docs/benchmarks.md with headroom', () => {
    const limitMiB = (component: Component): number => {
      const d = deploymentsOf('ci/defaults-values.yaml').find((x) => componentOf(x) === component);
      const quantity = /^(\d+)(Mi|Gi)$/.exec(d?.spec.template.spec.containers[0].resources.limits.memory ?? '');
      return Number(quantity?.[1]) * (quantity?.[2] === 'Gi' ? 1024 : 1);
    };
    const peaks = benchmarkPeaksMiB();
    expect(peaks.snapshot100k).toBeGreaterThan(0);
    expect(peaks.hub3000).toBeGreaterThan(0);
    // read-api and mcp-gateway hold the same snapshot; the hub its own copy plus the fan-out.
    for (const component of ['read-api', 'mcp-gateway'] as const) expect(limitMiB(component)).toBeGreaterThanOrEqual(peaks.snapshot100k * HEADROOM);
    expect(limitMiB('websub-hub')).toBeGreaterThanOrEqual(peaks.hub3000 * HEADROOM);
  });

  it('websub-hub may call the configured callback ports: 443 by default', () => {
    const hubPorts = (file: string) => ofKind(set(file), 'NetworkPolicy').find((p) => p.metadata.name.endsWith('-websub-hub'))?.spec.egress[0].ports;
    expect(hubPorts('ci/defaults-values.yaml')).toEqual([{ port: 443, protocol: 'TCP' }]);
    expect(hubPorts('ci/all-on-values.yaml')).toEqual([
      { port: 443, protocol: 'TCP' },
      { port: 8443, protocol: 'TCP' },
    ]);
  });

  it('websub-hub trusts one proxy hop in X-Forwarded-For behind the chart’s Ingress, none under Tilt (port-forwards)', () => {
    const hops = (file: string) => loadConfig(ofKind(set(file), 'ConfigMap').find((c) => c.metadata.name.endsWith('-config'))?.data).WEBSUB_TRUSTED_PROXY_HOPS;
    expect(hops('ci/defaults-values.yaml')).toBe(1);
    expect(hops('ci/all-on-values.yaml')).toBe(1);
    expect(hops(DEV_VALUES)).toBe(0);
  });

  it('HPA on: every service autoscaled with its own bounds', () => {
    const hpas = ofKind(set('ci/hpa-values.yaml'), 'HorizontalPodAutoscaler');
    expect(hpas.map((h) => [componentOf(h), h.spec.minReplicas, h.spec.maxReplicas]).sort()).toEqual([
      ['mcp-gateway', 3, 30],
      ['read-api', 2, 20],
      ['websub-hub', 1, 4],
    ]);
  });

  it('external NATS: the URL reaches every pod and egress is opened to it', () => {
    const objects = set('ci/external-nats-values.yaml');
    expect(ofKind(objects, 'ConfigMap')[0]?.data).toMatchObject({ NATS_URL: 'tls://nats.example.net:4222', NATS_REPLICAS: '5' });
    expect(ofKind(objects, 'Job')).toHaveLength(0);
    const egress = ofKind(objects, 'NetworkPolicy')[0]?.spec.egress as { to?: unknown[] }[];
    expect(egress.flatMap((r) => r.to ?? [])).toContainEqual({ ipBlock: { cidr: '198.51.100.10/32' } });
  });

  it('network policies off: none rendered (and single replicas get no PDB)', () => {
    const objects = set('ci/netpol-off-values.yaml');
    expect(ofKind(objects, 'NetworkPolicy')).toHaveLength(0);
    expect(ofKind(objects, 'PodDisruptionBudget')).toHaveLength(0);
  });

  it('everything on: a private NATS CA reaches every pod, the seed Job included', () => {
    const objects = set('ci/all-on-values.yaml');
    expect(ofKind(objects, 'ConfigMap')[0]?.data?.NATS_URL).toBe('tls://nats.nats.svc.cluster.local:4222');
    for (const { owner, pod } of podSpecs(objects)) {
      const where = `${owner.kind}/${owner.metadata.name}`;
      expect({ where, volumes: pod.spec.volumes }).toEqual({ where, volumes: expect.arrayContaining([{ name: 'extra-ca', secret: { secretName: 'nats-ca', items: [{ key: 'ca.crt', path: 'ca.pem' }] } }]) });
      expect({ where, env: pod.spec.containers[0].env }).toEqual({ where, env: expect.arrayContaining([{ name: 'NODE_EXTRA_CA_CERTS', value: '/etc/ssl/extra/ca.pem' }]) });
    }
    expect(podSpecs(objects).map(({ owner }) => owner.kind).sort()).toEqual(['Deployment', 'Deployment', 'Deployment', 'Job']);
  });

  it('everything on: TLS for all hosts, digest-pinned image, tracing, ServiceMonitor with its release label', () => {
    const objects = set('ci/all-on-values.yaml');
    const [ingress] = ofKind(objects, 'Ingress');
    expect(ingress?.spec.tls).toEqual([{ secretName: 'test-release-public-reviews-tls', hosts: ['reviews.example.com', 'www.reviews.example.com'] }]);
    expect(ingress?.spec.ingressClassName).toBe('nginx');
    expect(deploymentsOf('ci/all-on-values.yaml')[0]?.spec.template.spec.containers[0].image).toMatch(/^registry\.example\.com\/reviews\/public-reviews@sha256:/);
    expect(ofKind(objects, 'ConfigMap')[0]?.data).toMatchObject({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.monitoring.svc:4318', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio' });
    const [sm] = ofKind(objects, 'ServiceMonitor');
    expect(sm?.metadata.labels?.release).toBe('kube-prometheus-stack');
    expect(sm?.spec.jobLabel).toBe('app.kubernetes.io/component');
  });


  // An upgrade by image tag (deploy.md §4) used to keep the chart's appVersion in the labels (and NOTES).
  it('labels every object with the version the image tag names', async () => {
    const result = await helm(helmBin, ['template', 't', chartDir, '--set', 'image.tag=1.1.0', '--set', 'baseUrl=https://reviews.example.com', '--set', 'nats.url=nats://nats:4222']);
    const objects = parseManifests(result.stdout, 'image.tag');
    expect(new Set(objects.map((o) => o.metadata.labels?.['app.kubernetes.io/version']))).toEqual(new Set(['1.1.0']));
  });

  // A tag may begin with _, end with . _ or - and run to 128 characters; a label value may not, and the
  // API server refused every object labelled with v1_.
  it.each([
    ['v1_', 'v1_', 'v1'],
    ['1.0.', '1.0.', '1.0'],
    ['_v1', '_v1', 'v1'],
    ['1.0-', '1.0-', '1.0'],
    ['of 65 characters cut after a .', `${'a'.repeat(62)}._b`, 'a'.repeat(62)],
    ['of 65 characters cut after a _', `${'a'.repeat(61)}-__b`, 'a'.repeat(61)],
    ['of 64 characters', `${'a'.repeat(63)}b`, 'a'.repeat(63)],
  ])('labels the objects of image tag %s with a valid label value', async (_name, tag, version) => {
    const result = await helm(helmBin, ['template', 't', chartDir, '--set', `image.tag=${tag}`, '--set', 'baseUrl=https://reviews.example.com']);
    expect(result.stderr).toBe('');
    const objects = parseManifests(result.stdout, 'image.tag');
    expect(new Set(objects.map((o) => o.metadata.labels?.['app.kubernetes.io/version']))).toEqual(new Set([version]));
    expect(version).toMatch(/^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/);
    for (const { pod } of podSpecs(objects)) expect(pod.spec.containers[0].image).toBe(`public-reviews:${tag}`);
  });

  // A tag of digits alone (a date, or about one short git SHA in 27) reaches the chart from --set as an
  // integer, which the schema refused. A single retry delay is the same.
  it('takes an image tag and a retry delay of digits alone from --set, rendered as those digits', async () => {
    const result = await helm(helmBin, ['template', 't', chartDir, '--set', 'baseUrl=https://reviews.example.com', '--set', 'image.tag=20261128', '--set', 'websub.retryDelaysMs=60000']);
    expect(result.stderr).toBe('');
    const objects = parseManifests(result.stdout, '--set digits');
    for (const { pod } of podSpecs(objects)) expect(pod.spec.containers[0].image).toBe('public-reviews:20261128');
    expect(new Set(objects.map((o) => o.metadata.labels?.['app.kubernetes.io/version']))).toEqual(new Set(['20261128']));
    const config = ofKind(objects, 'ConfigMap').find((c) => c.metadata.name.endsWith('-config'))?.data;
    expect(config?.WEBSUB_RETRY_DELAYS_MS).toBe('60000');
    expect(loadConfig(config).WEBSUB_RETRY_DELAYS_MS).toEqual([60_000]);
  });

  // Helm takes a release named 2025; unquoted, its labels and selectors became numbers Kubernetes refuses.
  it.each([
    ['release', ['--set-string', 'nameOverride=2024']],
    ['fullnameOverride', ['--set-string', 'fullnameOverride=12345', '--set-string', 'nameOverride=2024']],
  ])('renders valid objects for a %s, chart and Secret names made of digits', async (_label, overrides) => {
    const result = await helm(helmBin, [
      'template', '2025', chartDir, '--set', 'baseUrl=https://reviews.example.com', '--set', 'metrics.serviceMonitor.enabled=true', '--set', 'metrics.prometheusRule.enabled=true',
      '--set-string', 'nats.existingSecret=1234', '--set-string', 'nats.credsSecret=5678', '--set-string', 'mcp.session.existingSecret=42', '--set-string', 'serviceAccount.name=7', '--set-string', 'imagePullSecrets[0]=9',
      ...overrides,
    ]);
    const objects = parseManifests(result.stdout, 'digits');
    expect(objects.length).toBeGreaterThan(10);
    for (const object of objects) {
      validateObject(object);
      expect(typeof object.metadata.name).toBe('string');
    }
    expect(new Set(objects.map((o) => o.metadata.labels?.['app.kubernetes.io/instance']))).toEqual(new Set(['2025']));
    expect(new Set(objects.map((o) => o.metadata.labels?.['app.kubernetes.io/name']))).toEqual(new Set(['2024']));
  });

  it('lets the hub reach private addresses, pods included, exactly when websub.allowPrivateCallbacks lets it call them', async () => {
    const hubEgress = async (allowPrivateCallbacks: boolean) => {
      const result = await helm(helmBin, ['template', 't', chartDir, '--set', 'baseUrl=https://reviews.example.com', '--set', `websub.allowPrivateCallbacks=${allowPrivateCallbacks}`]);
      const policy = ofKind(parseManifests(result.stdout, 'allowPrivateCallbacks'), 'NetworkPolicy').find((p) => componentOf(p) === 'websub-hub');
      return (policy?.spec.egress as { to?: unknown[] }[]).find((rule) => JSON.stringify(rule.to ?? []).includes('0.0.0.0/0'))?.to;
    };
    expect(await hubEgress(true)).toEqual([{ ipBlock: { cidr: '0.0.0.0/0' } }, { ipBlock: { cidr: '::/0' } }, { namespaceSelector: {} }]);
    expect(await hubEgress(false)).toContainEqual({ ipBlock: { cidr: '0.0.0.0/0', except: expect.arrayContaining(['10.0.0.0/8', '169.254.0.0/16']) } });
  });

  it('passes every websub value to the services as its WEBSUB_ variable', async () => {
    const websub = { allowPrivateCallbacks: true, leaseDefaultSeconds: 7200, leaseMinSeconds: 600, leaseMaxSeconds: 86400, retryDelaysMs: '0,1000', trustedProxyHops: 2, maxSubscriptions: 50 };
    const defaults = parse(readFileSync(join(chartDir, 'values.yaml'), 'utf8')) as { websub: Record<string, unknown> };
    expect(Object.keys(websub).sort()).toEqual(Object.keys(defaults.websub).sort());
    const result = await helm(helmBin, ['template', 't', chartDir, '--set', 'baseUrl=https://reviews.example.com', '--set-json', `websub=${JSON.stringify(websub)}`]);
    const data = ofKind(parseManifests(result.stdout, 'websub values'), 'ConfigMap').find((c) => c.metadata.name.endsWith('-config'))?.data ?? {};
    for (const [key, value] of Object.entries(websub)) {
      const name = `WEBSUB_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
      expect({ name, value: data[name] }).toEqual({ name, value: String(value) });
    }
  });

  it('keeps every name within Kubernetes\' 63 characters under the longest fullnameOverride', async () => {
    const result = await helm(helmBin, ['template', 't', chartDir, '--set', 'baseUrl=https://reviews.example.com', '--set', `fullnameOverride=${'r'.repeat(63)}`]);
    expect(result.ok).toBe(true);
    const names = parseManifests(result.stdout, 'fullnameOverride').map((o) => o.metadata.name);
    expect(names.filter((name) => name.length > 63)).toEqual([]);
  });

  // YAML integers of a million and more reached the ConfigMap as 2.592e+06.
  it('writes large integer values into the environment as integers', async () => {
    const result = await helm(helmBin, ['template', 't', chartDir, '--set', 'baseUrl=https://reviews.example.com', '--set', 'websub.leaseMaxSeconds=2592000', '--set', 'websub.maxSubscriptions=1000000']);
    const [config] = ofKind(parseManifests(result.stdout, 'large integers'), 'ConfigMap');
    expect([config?.data?.WEBSUB_LEASE_MAX_SECONDS, config?.data?.WEBSUB_MAX_SUBSCRIPTIONS]).toEqual(['2592000', '1000000']);
  });

  // A platform team's audit: without it, pointing mcp.session.existingSecret at the generated Secret deleted
  // the key it read on that very upgrade, and an uninstall lost the key every client's session is signed with.
  it('keeps the generated MCP session Secret when the chart stops rendering it', async () => {
    const result = await helm(helmBin, ['template', 't', chartDir, '--set', 'baseUrl=https://reviews.example.com']);
    const [secret] = ofKind(parseManifests(result.stdout, 'generated session Secret'), 'Secret');
    expect(secret?.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
  });

  it('reuses an existing MCP session Secret instead of generating one', async () => {
    const result = await helm(helmBin, ['template', 't', chartDir, '--set', 'baseUrl=https://reviews.example.com', '--set', 'mcp.session.existingSecret=mine', '--set', 'mcp.session.existingSecretKey=key']);
    const objects = parseManifests(result.stdout, 'existingSecret');
    expect(ofKind(objects, 'Secret')).toHaveLength(0);
    const gateway = ofKind(objects, 'Deployment').find((d) => componentOf(d) === 'mcp-gateway');
    expect(gateway?.spec.template.spec.containers[0].env).toContainEqual({ name: 'MCP_SESSION_SECRET', valueFrom: { secretKeyRef: { name: 'mine', key: 'key' } } });
  });

  it('NATS identity: the creds file and the client certificate with its CA reach every pod and the seed Job, mounted read-only from their Secrets', () => {
    const objects = set('ci/nats-identity-values.yaml');
    const files = [
      { name: 'NATS_CREDS', value: '/etc/nats/creds/user.creds' },
      { name: 'NATS_CERT', value: '/etc/nats/tls/tls.crt' },
      { name: 'NATS_KEY', value: '/etc/nats/tls/tls.key' },
      { name: 'NATS_CA', value: '/etc/nats/tls/ca.crt' },
    ];
    expect(podSpecs(objects).map(({ owner }) => owner.kind).sort()).toEqual(['Deployment', 'Deployment', 'Deployment', 'Job']);
    for (const { owner, pod } of podSpecs(objects)) {
      const where = `${owner.kind}/${owner.metadata.name}`;
      const [container] = pod.spec.containers;
      expect({ where, env: container.env }).toEqual({ where, env: expect.arrayContaining(files) });
      expect({ where, mounts: container.volumeMounts }).toEqual({
        where,
        mounts: expect.arrayContaining([
          { name: 'nats-creds', mountPath: '/etc/nats/creds', readOnly: true },
          { name: 'nats-tls', mountPath: '/etc/nats/tls', readOnly: true },
        ]),
      });
      expect({ where, volumes: pod.spec.volumes }).toEqual({
        where,
        volumes: expect.arrayContaining([
          { name: 'nats-creds', secret: { secretName: 'reviews-nats-creds' } },
          { name: 'nats-tls', secret: { secretName: 'reviews-nats-client-tls' } },
        ]),
      });
    }
  });

  it('NATS identity by NKey: the seed file reaches every pod and the seed Job, mounted read-only from its Secret', () => {
    const objects = set('ci/nats-nkey-values.yaml');
    expect(podSpecs(objects).map(({ owner }) => owner.kind).sort()).toEqual(['Deployment', 'Deployment', 'Deployment', 'Job']);
    for (const { owner, pod } of podSpecs(objects)) {
      const where = `${owner.kind}/${owner.metadata.name}`;
      const [container] = pod.spec.containers;
      expect({ where, env: container.env }).toEqual({ where, env: expect.arrayContaining([{ name: 'NATS_NKEY', value: '/etc/nats/nkey/user.nk' }]) });
      expect({ where, mounts: container.volumeMounts }).toEqual({ where, mounts: expect.arrayContaining([{ name: 'nats-nkey', mountPath: '/etc/nats/nkey', readOnly: true }]) });
      expect({ where, volumes: pod.spec.volumes }).toEqual({ where, volumes: expect.arrayContaining([{ name: 'nats-nkey', secret: { secretName: 'reviews-nats-nkey' } }]) });
    }
  });

  it('takes NATS_URL, credentials and all, from an existing Secret instead of the ConfigMap', async () => {
    const result = await helm(helmBin, ['template', 't', chartDir, '--set', 'baseUrl=https://reviews.example.com', '--set', 'nats.existingSecret=reviews-nats']);
    const objects = parseManifests(result.stdout, 'nats.existingSecret');
    expect(ofKind(objects, 'ConfigMap')[0]?.data).not.toHaveProperty('NATS_URL');
    const fromSecret = { name: 'NATS_URL', valueFrom: { secretKeyRef: { name: 'reviews-nats', key: 'nats-url' } } };
    const workloads = [...ofKind(objects, 'Deployment'), ...ofKind(objects, 'Job')];
    expect(workloads.map(componentOf).sort()).toEqual(['mcp-gateway', 'read-api', 'seed', 'websub-hub']);
    for (const workload of workloads) expect({ component: componentOf(workload), env: workload.spec.template.spec.containers[0].env }).toEqual({ component: componentOf(workload), env: expect.arrayContaining([fromSecret]) });
  });
});

/** Figures of docs/benchmarks.md (its bench-data block): peak RSS loading 100,000 reviews, hub peak at 3,000 subscriptions. */
function benchmarkPeaksMiB(): { snapshot100k: number; hub3000: number } {
  interface Section { id: string; tables: { rows: (string | number)[][] }[]; figures: Record<string, number> }
  const json = /<!-- bench-data (\{.*\}) -->/.exec(readFileSync(join(repoRoot, 'docs/benchmarks.md'), 'utf8'))?.[1] ?? '{}';
  const sections = (JSON.parse(json) as { sections: Section[] }).sections;
  const swapRow = sections.find((s) => s.id === 'swap')?.tables.flatMap((t) => t.rows).find((r) => r[0] === 'peak RSS while loading 100,000 reviews');
  return { snapshot100k: Number(swapRow?.[1]), hub3000: Number(sections.find((s) => s.id === 'fanout')?.figures.rss_peak_mib_3000) };
}
/** Limit over measured peak: GC timing, allocator fragmentation and the measuring machine's luck. */
const HEADROOM = 1.15;

describe('deploy/dev/nats.yaml (Tilt)', () => {
  it('is valid against the Kubernetes schemas', () => {
    const objects = parseManifests(readFileSync(join(repoRoot, 'deploy/dev/nats.yaml'), 'utf8'), 'deploy/dev/nats.yaml');
    expect(objects.map((o) => o.kind)).toEqual(['Deployment', 'Service']);
    for (const object of objects) {
      validateObject(object);
      expect(unknownFields(object)).toEqual([]);
    }
  });
});
