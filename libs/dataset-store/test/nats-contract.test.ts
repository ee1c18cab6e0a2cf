import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { validateDataset } from '@reviews/domain';
import { NatsDatasetSource, NatsDatasetStore } from '@reviews/dataset-store';
import { createMetrics } from '@reviews/runtime';
import { startNatsServer } from '../../../test/support/nats-server.js';
import { describeDatasetSourceContract } from './source-contract.js';

const logger = pino({ level: 'silent' });

// Each case gets a fresh server, so "nothing published yet" really means an empty store.
describeDatasetSourceContract('nats', async (initial) => {
  const server = await startNatsServer();
  const nc = await connect({ servers: server.url });
  const store = await NatsDatasetStore.open(nc, 1);
  const publish = async (bytes: Uint8Array) => {
    const validated = validateDataset(JSON.parse(Buffer.from(bytes).toString('utf8')));
    if (!validated.ok) throw new Error(`contract fixture is invalid: ${JSON.stringify(validated.issues)}`);
    await store.publish(validated.input);
  };
  if (initial) await publish(initial);
  const source = new NatsDatasetSource({ nats: { servers: server.url }, replicas: 1, service: 'contract', logger, registry: createMetrics().registry });
  return {
    source,
    publish,
    cleanup: async () => {
      await source.close();
      await nc.close();
      await server.dispose();
    },
  };
});
