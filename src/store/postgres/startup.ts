import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { Logger } from 'pino';
import { describeStore, postgresPlace } from '../../domain/database-url.js';
import { misconfigured, storeError } from './errors.js';
import { StoreUnavailableError } from '../store.js';

export interface StartupOptions {
  readonly url: string;
  readonly startupTimeoutMs: number;
  readonly logger: Logger;
  /** Called once, when the first attempt failed in a way that waiting may mend: start-up now waits. */
  readonly onWaiting?: (() => void) | undefined;
  /** Ends the wait: the attempts stop and the open rejects (start-up failed elsewhere meanwhile). */
  readonly signal?: AbortSignal | undefined;
}

/**
 * The URL as node-postgres is given it. pg 8 reads sslmode=prefer, require and verify-ca as verify-full
 * (the server's certificate and host name are checked) and says so in a multi-line warning on stderr
 * at the first connection; its next major version reads them as libpq does (require: encrypted, not
 * checked). Saying verify-full outright keeps the meaning they have today, which is the safer one,
 * whichever pg is installed, without the warning; the operator's URL stays one that psql and pg_dump
 * read. A URL that asks for libpq's meaning itself (uselibpqcompat=true) is left as it is.
 */
export function connectionString(url: string): string {
  if (/[?&]uselibpqcompat=true(&|#|$)/.test(url)) return url;
  return url.replace(/([?&])sslmode=(prefer|require|verify-ca)(?=&|#|$)/g, '$1sslmode=verify-full');
}

/**
 * Tries a connection until one answers `SELECT 1`, with backoff, for up to the start-up timeout. A
 * misconfiguration (see `misconfigured`) fails at once, before `onWaiting`: a server then never says
 * it listens.
 */
export async function waitForDatabase(pool: pg.Pool, { url, startupTimeoutMs, logger, onWaiting, signal }: StartupOptions): Promise<void> {
  const place = postgresPlace(url);
  const named = describeStore({ kind: 'postgres', url }, 'place');
  const deadline = Date.now() + startupTimeoutMs;
  for (let attempt = 1, pause = 250; ; attempt++, pause = Math.min(pause * 2, 2000)) {
    try {
      const client = await pool.connect().catch((error: unknown) => {
        throw misconfigured(error) ? error : new StoreUnavailableError(error);
      });
      await client.query('SELECT 1').then(
        () => client.release(),
        (error: Error) => {
          client.release(error);
          throw error;
        },
      );
      if (attempt > 1) logger.info({ database: place }, 'PostgreSQL is reachable');
      return;
    } catch (error) {
      if (misconfigured(error)) throw error; // a bad password, no TLS: waiting won't help
      const unavailable = error instanceof StoreUnavailableError ? error : storeError(error);
      if (!(unavailable instanceof StoreUnavailableError)) throw error;
      const reason = unavailable.cause instanceof Error ? unavailable.cause.message : String(unavailable.cause);
      if (Date.now() + pause > deadline) {
        throw new Error(`${named} did not accept connections within ${startupTimeoutMs / 1000}s: ${reason}`);
      }
      logger.warn({ database: place, attempt, reason }, `waiting for ${named}`);
      if (attempt === 1) onWaiting?.();
      await sleep(pause, undefined, { signal });
    }
  }
}
