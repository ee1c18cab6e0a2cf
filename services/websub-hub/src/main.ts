import { connect } from '@nats-io/transport-node';
import { runPod } from '@reviews/dataset-store';
import { ConfigError, natsConnectOptions, READ_AND_POST_METHODS } from '@reviews/runtime';
import { createNatsWebSubHub } from './compose.js';
import { HUB_SERVICE as SERVICE, hubPodHandler } from './hub.js';

// websub-hub as it runs in a pod: shared state and delivery work in NATS JetStream, so any number
// of replicas fan out each change once per subscription.
await runPod(SERVICE, async ({ config, logger, metrics, snapshots }) => {
  if (config.NATS_URL === undefined) {
    throw new ConfigError(['NATS_URL: required: replicas share subscriptions over NATS (the standalone `npm start` runs the hub without it)']);
  }
  const nc = await connect({
    ...natsConnectOptions(config.NATS_URL),
    name: SERVICE,
    waitOnFirstConnect: true,
    maxReconnectAttempts: -1,
  });
  const hub = await createNatsWebSubHub({ config, logger, metrics, snapshots, nc, replicas: config.NATS_REPLICAS });
  await hub.start();
  return {
    handler: hubPodHandler(hub, { metrics, logger }),
    allow: READ_AND_POST_METHODS,
    stopTakingWork: () => hub.stopTakingWork(),
    close: async () => {
      await hub.close();
      await nc.drain();
    },
  };
});
