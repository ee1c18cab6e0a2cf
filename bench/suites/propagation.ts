import type { Agent } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import { buildSnapshotFromInput, type DatasetInput } from '@reviews/domain';
import { NatsDatasetStore } from '@reviews/dataset-store';
import { pollAgent as createPollAgent, servedEtag } from '../lib/etag-poll.ts';
import { loadNote } from '../lib/machine.ts';
import { fmt, type Section } from '../lib/report.ts';
import { BASE_URL, startService } from '../lib/context.ts';
import { datasetInput, editedVersions } from '../lib/datasets.ts';
import { startBenchNats } from '../lib/nats.ts';
import { freePort, type Running } from '../lib/processes.ts';
import { scrapeValue } from '../lib/prometheus.ts';
import { percentile } from '../lib/stats.ts';

const REPLICAS = 3;
const REVIEWS = 2_000;
// At least 20 publishes (issue 3); BENCH_SECONDS smoke runs keep the minimum.
const PUBLISHES = 40;
/**
 * Publishes made and waited for before the measured ones: a replica's first builds after start run
 * cold code in a young heap (~80 ms more each, ADR 0007), which is start-up, not propagation.
 */
const WARMUP_PUBLISHES = 5;
const POLL_GAP_MS = 10;
const CONVERGE_TIMEOUT_MS = 10_000;

interface Histogram {
  readonly sum: number;
  readonly count: number;
}

/** The replica's own timings: snapshot build, publish (pointer time) → serving, and its process CPU seconds. */
async function histograms(metricsPort: number): Promise<{ build: Histogram; propagation: Histogram; cpuSeconds: number }> {
  const read = async (name: string) => ({ sum: await scrapeValue(metricsPort, `${name}_sum`), count: await scrapeValue(metricsPort, `${name}_count`) });
  return { build: await read('dataset_snapshot_build_duration_seconds'), propagation: await read('dataset_propagation_seconds'), cpuSeconds: await scrapeValue(metricsPort, 'process_cpu_seconds_total') };
}

/** The ETags of /reviews.json every replica must serve for `input`, identity and brotli (representations are deterministic). */
function reviewsEtags(input: DatasetInput): { identity: string; br: string } {
  const { identity, br } = buildSnapshotFromInput(input, { baseUrl: BASE_URL, publishedAt: new Date() }).representations.reviews;
  if (!br) throw new Error('the reviews document of the benchmark dataset has no brotli variant');
  return { identity: identity.etag, br: br.etag };
}

/**
 * Milliseconds after `start` at which the replica first answered with `etag` in `coding`; polled
 * back to back with a short gap.
 */
async function servesAt(pollAgent: Agent, port: number, etag: string, start: number, what: string, coding: 'identity' | 'br' = 'identity'): Promise<number> {
  const deadline = start + CONVERGE_TIMEOUT_MS;
  while (performance.now() < deadline) {
    if ((await servedEtag(pollAgent, port, coding).catch(() => '')) === etag) return performance.now() - start;
    await delay(POLL_GAP_MS);
  }
  throw new Error(`${what}: the replica on port ${port} did not serve ETag ${etag} within ${CONVERGE_TIMEOUT_MS} ms`);
}

/** Publish → the last of three read-api replicas (separate processes following NATS) serving the new ETag. */
export async function propagation(): Promise<Section> {
  const load = loadNote();
  const inputs = editedVersions(datasetInput(REVIEWS, 11), WARMUP_PUBLISHES + PUBLISHES + 1);
  const etags = inputs.map(reviewsEtags);

  const nats = await startBenchNats();
  const replicas: Running[] = [];
  const nc = await connect({ servers: nats.url, name: 'bench-propagation' });
  const pollAgent = createPollAgent();
  const publishMs: number[] = [];
  const firstMs: number[] = [];
  const lastMs: number[] = [];
  const brotliMs: number[] = [];
  const metricsPorts: number[] = [];
  /** Mean seconds per replica from the service's own histograms, to tell where the time goes. */
  const means: { build: number; propagation: number; cpu: number }[] = [];
  /** CPU of this process (publisher and pollers) over the measured publishes. */
  let benchCpu = { user: 0, system: 0 };
  try {
    const store = await NatsDatasetStore.open(nc, 1);
    // Readiness stays false until a replica has a dataset, so the first version goes out before they start.
    await store.publish(inputs[0]!);
    for (let i = 0; i < REPLICAS; i++) {
      const metricsPort = await freePort();
      metricsPorts.push(metricsPort);
      replicas.push(await startService('services/read-api/dist/main.js', { NATS_URL: nats.url, METRICS_PORT: String(metricsPort) }));
    }
    for (const replica of replicas) await servesAt(pollAgent, replica.port, etags[0]!.identity, performance.now(), 'first dataset');
    for (let n = 1; n <= WARMUP_PUBLISHES; n++) {
      await store.publish(inputs[n]!);
      for (const replica of replicas) await servesAt(pollAgent, replica.port, etags[n]!.br, performance.now(), `warm-up publish ${n}`, 'br');
    }
    const before = await Promise.all(metricsPorts.map(histograms));
    const cpuBefore = process.cpuUsage();

    for (let n = WARMUP_PUBLISHES + 1; n <= WARMUP_PUBLISHES + PUBLISHES; n++) {
      const start = performance.now();
      const arrivals = replicas.map((r) => servesAt(pollAgent, r.port, etags[n]!.identity, start, `publish ${n - WARMUP_PUBLISHES} of ${PUBLISHES}`));
      const outcome = await store.publish(inputs[n]!);
      if (outcome.status !== 'published') throw new Error(`publish ${n} was ${outcome.status}`);
      publishMs.push(performance.now() - start);
      const times = await Promise.all(arrivals);
      firstMs.push(Math.min(...times));
      lastMs.push(Math.max(...times));
      // Settled before the next publish, as replicas are between real publishes (minutes apart): the
      // brotli variants each replica makes after its swap (ADR 0007) are served.
      const settled = await Promise.all(replicas.map((r) => servesAt(pollAgent, r.port, etags[n]!.br, start, `brotli of publish ${n - WARMUP_PUBLISHES}`, 'br')));
      brotliMs.push(Math.max(...settled));
    }
    benchCpu = process.cpuUsage(cpuBefore);
    const after = await Promise.all(metricsPorts.map(histograms));
    // Over the measured publishes only: the first load at start-up is left out.
    const mean = (a: Histogram, b: Histogram) => (a.sum - b.sum) / (a.count - b.count);
    for (const [i, a] of after.entries()) {
      const b = before[i]!;
      means.push({ build: mean(a.build, b.build), propagation: mean(a.propagation, b.propagation), cpu: (a.cpuSeconds - b.cpuSeconds) / PUBLISHES });
    }
  } finally {
    await nc.close();
    pollAgent.destroy();
    await Promise.all(replicas.map((r) => r.stop()));
    await nats.stop();
  }

  const row = (name: string, values: number[]) => [name, fmt(percentile(values, 50)), fmt(percentile(values, 99)), fmt(Math.max(...values))];
  const bytes = Buffer.byteLength(JSON.stringify(inputs[0]));
  return {
    id: 'propagation',
    title: 'Dataset propagation over NATS (publish → every replica)',
    intro:
      `A private nats-server (JetStream), ${REPLICAS} read-api replicas as separate processes (\`services/read-api/dist/main.js\` with \`NATS_URL\`), ` +
      `${PUBLISHES} measured publishes of a ${fmt(REVIEWS)}-review dataset (${fmt(bytes / 1024)} KiB of JSON; each publish edits one owner reply) through \`NatsDatasetStore.publish\`, after ${WARMUP_PUBLISHES} unmeasured ones that warm the replicas up. ` +
      `Each publish is timed from the call until the last replica answers \`HEAD /reviews.json\` with the new ETag (polled every ${POLL_GAP_MS} ms per replica over a kept-alive connection). ` +
      'The next publish starts once every replica also serves the brotli variant, which a replica makes after its swap (ADR 0007): replicas are settled when a publish comes, as between real publishes. ' +
      'The publish call itself stores the object, reads it back and moves the pointer; replicas then fetch, validate, derive and swap.' +
      ` ${load}`,
    targets: ['p99 publish → last replica serving the new ETag under 500 ms'],
    commands: ['npm run bench -- propagation'],
    tables: [
      {
        columns: ['stage (ms after the publish call)', 'p50', 'p99', 'max'],
        rows: [row('publish call returned (pointer moved)', publishMs), row('first replica serves new ETag', firstMs), row(`last of ${REPLICAS} replicas serves new ETag`, lastMs), row(`last of ${REPLICAS} replicas serves its brotli variant`, brotliMs)],
      },
      {
        columns: ['process', 'mean snapshot build ms (dataset_snapshot_build_duration_seconds)', 'mean publish → swap ms (dataset_propagation_seconds)', 'CPU ms per publish (all threads)'],
        rows: [
          ...means.map((m, i) => [`replica ${i + 1}`, fmt(m.build * 1000), fmt(m.propagation * 1000), fmt(m.cpu * 1000)]),
          ['benchmark (publisher and pollers)', '—', '—', fmt((benchCpu.user + benchCpu.system) / 1000 / PUBLISHES)],
        ],
      },
    ],
    figures: {
      last_replica_p50_ms: Math.round(percentile(lastMs, 50)),
      last_replica_p99_ms: Math.round(percentile(lastMs, 99)),
      publish_call_p50_ms: Math.round(percentile(publishMs, 50)),
    },
  };
}
