/**
 * Pauses that `wake()` ends early: a retry loop's wait between attempts, which closing the loop must
 * not sit out.
 */
export interface WakeablePause {
  pause(ms: number): Promise<void>;
  /** Ends the pause under way, if any. */
  wake(): void;
}

export function wakeablePause(): WakeablePause {
  let wakeCurrent: (() => void) | null = null;
  return {
    pause: (ms) =>
      new Promise((resolve) => {
        const end = () => {
          clearTimeout(timer);
          wakeCurrent = null;
          resolve();
        };
        const timer = setTimeout(end, ms);
        wakeCurrent = end;
      }),
    wake: () => wakeCurrent?.(),
  };
}
