import { runPod } from '@reviews/dataset-store';
import { ConfigError, natsAccessOf } from '@reviews/runtime';
import { HUB_SERVICE as SERVICE } from './hub.js';
import { natsHubPod } from './nats-pod.js';

// websub-hub as it runs in a pod: shared state and delivery work in NATS JetStream, so any number
// of replicas fan out each change once per subscription.
await runPod(SERVICE, (context) => {
  const nats = natsAccessOf(context.config);
  if (nats === undefined) {
    throw new ConfigError(['NATS_URL: required: replicas share subscriptions over NATS (the standalone `npm start` runs the hub without it)']);
  }
  return natsHubPod(context, nats);
});
