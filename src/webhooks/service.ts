import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import { Dispatcher, type DispatcherSettings } from './dispatcher.js';

/** What the service runs on: the dispatcher's settings, and its own timers (options, not user settings). */
export type WebhookServiceSettings = DispatcherSettings & {
  /**
   * How often due events are looked for without a wake-up: expired claims of an instance that died,
   * retries another instance scheduled, and events whose notice never came (the store's wake-up across
   * instances is a hint that may be lost, with its connection).
   */
  readonly pollIntervalMs?: number;
  /** How often delivered and failed events past WEBHOOK_RETENTION are removed. */
  readonly sweepIntervalMs?: number;
};

const DEFAULT_POLL_INTERVAL_MS = 1000;
const DEFAULT_SWEEP_INTERVAL_MS = 60_000;

/** The webhook worker of one app, as a unit: made by webhookService, started and stopped once. */
export interface WebhookService {
  /** The id its claims carry in the store. */
  readonly instance: string;
  /**
   * Starts delivering: registers its wake-up with the store (onEventsQueued), starts the poll and the
   * sweep, and looks for due events now. Once only; nothing after stop().
   */
  start(): void;
  /**
   * Stops claiming at once; lets attempts in flight finish until `deadline` (epoch ms), then aborts the
   * rest for retry; releases what it claimed and did not attempt; records every result. A second call
   * returns the first call's promise (its deadline stands).
   */
  stop(deadline: number): Promise<void>;
  /** Something may be due: an idle worker looks now, not at the next poll. */
  nudge(): void;
  /**
   * The endpoint was deleted through this worker's app (DELETE /webhooks/{id}, before it answers): events
   * of it that this worker holds, or that a claim under way brings, are dropped, not sent. A deletion elsewhere (the CLI, another instance)
   * reaches a worker only through the store: events it held already may still start within their short
   * local wait (docs/webhooks.md).
   */
  endpointDeleted(endpointId: string): void;
}

/**
 * The webhook worker (graphile-worker's runner is the model): the dispatcher with the timers and the
 * store's wake-up that drive it, behind a handle. server.ts makes one per app, hands its deletion notice
 * to the app, starts it once the store is open and the server listens, and stops it during the drain.
 * Every member is a plain function: they may be passed on unbound.
 */
export function webhookService(store: Store, settings: WebhookServiceSettings, logger: Logger): WebhookService {
  const dispatcher = new Dispatcher(store, settings, logger);
  let state: 'new' | 'running' | 'stopped' = 'new';
  let poll: NodeJS.Timeout | undefined;
  let sweep: NodeJS.Timeout | undefined;
  let stopped: Promise<void> | undefined;

  const nudge = (): void => {
    if (state === 'running') dispatcher.wake();
  };

  const start = (): void => {
    if (state !== 'new') return;
    state = 'running';
    store.outbox.onEventsQueued(nudge);
    poll = setInterval(nudge, settings.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS);
    sweep = setInterval(() => void dispatcher.sweep(), settings.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS);
    // Neither keeps the process alive: a server's listener does, and a stopped service has cleared them.
    poll.unref();
    sweep.unref();
    nudge();
    void dispatcher.sweep();
  };

  const stop = (deadline: number): Promise<void> => {
    stopped ??= (async () => {
      const running = state === 'running';
      state = 'stopped';
      clearInterval(poll);
      clearInterval(sweep);
      // One listener per store: this one's goes, so that no wake-up reaches a stopped worker.
      if (running) store.outbox.onEventsQueued(() => undefined);
      await dispatcher.stop(deadline);
    })();
    return stopped;
  };

  return {
    instance: dispatcher.instance,
    start,
    stop,
    nudge,
    endpointDeleted: (endpointId) => dispatcher.forget(endpointId),
  };
}
