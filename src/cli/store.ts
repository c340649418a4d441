import { existsSync } from 'node:fs';
import { describeStore, type DatabaseConfig } from '../config/database.js';
import { loadDatabaseConfig } from '../config/load.js';
import { streamLogger } from '../logger.js';
import { openStore, type OpenOptions } from '../store/open.js';
import { NoStoreError, type Store } from '../store/store.js';
import type { Cli } from './io.js';

/** The option every command that uses the store takes. */
export const DATABASE_OPTION = { 'database-url': { type: 'string' } } as const;

/** How a command uses the store besides its operation. */
interface StoreUse {
  /** Exported stores only: a missing SQLite store is an error, not one to create. */
  readonly mustExist?: boolean;
  /**
   * A command that has nothing to do without a store: what it would have found ("there are no tokens
   * to list"). A missing SQLite store is then an error, and none is created.
   */
  readonly missing?: string;
  readonly onMigrated?: OpenOptions['onMigrated'];
  /** --quiet: nothing on stderr but errors (not which store, not that a new one is made). */
  readonly quiet?: boolean;
}

export function withStore<T>(cli: Cli, databaseUrl: string | undefined, use: (store: Store) => Promise<T>, how: StoreUse = {}): Promise<T> {
  return withOpenedStore(cli, databaseUrl, openStore, use, how);
}

export async function withOpenedStore<S extends Store, T>(
  cli: Cli,
  databaseUrl: string | undefined,
  open: (location: DatabaseConfig, options: OpenOptions) => Promise<S>,
  use: (store: S) => Promise<T>,
  { mustExist: mustExistOption = false, missing, onMigrated, quiet = false }: StoreUse = {},
): Promise<T> {
  const config = loadDatabaseConfig(databaseUrl, cli.env, cli.cwd);
  // A relative default means a CLI run from another directory finds another store, or makes a new one
  // whose tokens the server never sees: say which store this is, and when it is new.
  if (!quiet) cli.warn(`using ${describeStore(config.database, 'url')}`);
  if (config.database.kind === 'sqlite' && !existsSync(config.database.path)) {
    if (mustExistOption) throw new Error(`no store at ${config.database.path}: there is nothing to export`);
    if (missing !== undefined) {
      throw new Error(
        `no store at ${config.database.path}: ${missing} (run the command in the server's directory, or give it the server's DATABASE_URL)`,
      );
    }
    if (!quiet) cli.warn(
      `no store at ${config.database.path} yet: creating a new one (a server started in another directory, ` +
        'or with another DATABASE_URL, will not see it)',
    );
  }
  // Progress (waiting for PostgreSQL) goes to stderr, so stdout carries only the command's output.
  const logger = streamLogger(quiet ? 'error' : 'info', config.logFormat, cli.stderr, { sync: true });
  // On PostgreSQL, the same rule: a command with nothing to do without a store makes no tables.
  const mustExist = missing !== undefined || mustExistOption;
  let store: S;
  try {
    store = await open(config.database, {
      logger,
      poolSize: 1,
      startupTimeoutMs: config.databaseStartupTimeoutMs,
      onMigrated,
      // Said above already, in the CLI's words.
      logCreation: false,
      mustExist,
    });
  } catch (error) {
    if (!(error instanceof NoStoreError)) throw error;
    throw new Error(`no store at ${describeStore(config.database, 'url')}: ${missing ?? 'there is nothing to export'} (give the command the server's DATABASE_URL)`);
  }
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}
