import { describe, expect, it } from '@jest/globals';
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import { remakingWhenGone } from '../src/jetstream-loss.js';
import { capturingLogger } from './support.js';

// The rules of remaking on their own, with the state's answers scripted; nats-replicas, store and
// nats-queue-outage run them against a real nats-server whose store is wiped or deleted under the hub.

const streamNotFound = () => new JetStreamApiError({ code: 404, err_code: JetStreamApiCodes.StreamNotFound, description: 'stream not found' });

/** The state as NATS would tell it: `present` flips when remade; `answers` false models NATS away. */
function scriptedState({ present = false, answers = true } = {}) {
  const state = { present, checks: 0, remakes: 0 };
  const { logger, lines } = capturingLogger();
  const remade = remakingWhenGone({
    what: 'the test bucket',
    isGone: async () => {
      state.checks++;
      if (!answers) return new Promise<boolean>(() => undefined);
      await Promise.resolve();
      return !state.present;
    },
    remake: async () => {
      state.remakes++;
      await Promise.resolve();
      state.present = true;
    },
    logger,
  });
  /** An operation that fails with `error` while the state is missing, then answers `ok`. */
  const operation = (error: unknown = streamNotFound()) => async () => {
    if (!state.present) throw error;
    return 'ok';
  };
  return { state, remade, operation, warnings: () => lines.filter((line) => line.msg.includes('made it anew')).length };
}

describe('remakingWhenGone', () => {
  it('runs an operation once when it succeeds, asking nothing', async () => {
    const { state, remade, operation } = scriptedState({ present: true });
    await expect(remade(operation())).resolves.toBe('ok');
    expect(state).toMatchObject({ checks: 0, remakes: 0 });
  });

  it('remakes missing state once for operations failing together, with one check, and runs each again', async () => {
    const { state, remade, operation, warnings } = scriptedState();
    const results = await Promise.all(Array.from({ length: 8 }, () => remade(operation(new Error('timeout')))));
    expect(results).toEqual(Array(8).fill('ok'));
    expect(state).toMatchObject({ checks: 1, remakes: 1 });
    expect(warnings()).toBe(1);
  });

  it('leaves an ordinary failure as it is when the state is there', async () => {
    const { state, remade } = scriptedState({ present: true });
    const failure = new Error('wrong last sequence');
    await expect(
      remade(async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(state).toMatchObject({ checks: 1, remakes: 0 });
  });

  it('runs again, without remaking, an operation that found the state gone when another replica has remade it since', async () => {
    const { state, remade } = scriptedState({ present: true });
    let calls = 0;
    const result = await remade(async () => {
      if (++calls === 1) throw streamNotFound();
      return 'ok';
    });
    expect({ result, calls }).toEqual({ result: 'ok', calls: 2 });
    expect(state.remakes).toBe(0);
  });

  it('gives the operation\'s own error, within about a second, while NATS does not answer the check', async () => {
    const { state, remade, operation } = scriptedState({ answers: false });
    const failure = new Error('disconnected');
    const started = performance.now();
    await expect(remade(operation(failure))).rejects.toBe(failure);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(state.remakes).toBe(0);
  });
});
