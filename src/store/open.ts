import type { DatabaseConfig } from '../config.js';
import { openSqliteStore } from './sqlite.js';
import type { Store } from './store.js';

/** The one place a backend is chosen (used by server.ts, cli.ts and the test helper). */
export async function openStore(database: DatabaseConfig): Promise<Store> {
  return openSqliteStore(database.path);
}
