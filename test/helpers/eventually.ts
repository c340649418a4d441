import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Past this, a condition is taken for a hang. It is far beyond what any condition in the suite needs on a
 * loaded machine, so only a real hang reaches it; a test's own timing promises are asserted by the test.
 */
export const HANG_MS = 120_000;

/** How often a condition is looked at: often enough that a test waits little past the event. */
const POLL_MS = 20;

/**
 * Polls `check` until it returns a value other than undefined, and returns that value. For what has no
 * event to await (a file's contents, another process's rows); where there is an event, await it instead.
 * `what` names the condition in the error a hang ends with; a function is called then, so it can add
 * what the test saw (a server's output, or a container's log, which takes a command to read).
 */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, what: string | (() => string | Promise<string>) = 'condition'): Promise<T> {
  const until = Date.now() + HANG_MS;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`${typeof what === 'string' ? what : await what()}: not reached in ${HANG_MS} ms`);
    await sleep(POLL_MS);
  }
}

