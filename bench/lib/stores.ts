// The stores of scenarios 1 to 4, scale-out and the feed, seeded once per run: a small one (10k plants) and, for scenario 3, a
// large one (1M) on SQLite, the same on PostgreSQL when it runs, and copies of the small SQLite store so
// that every server has a store of its own (same plants, same token).
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Bench, ScenarioName } from './bench.js';
import { BENCH_USER, registerWebhook, seedPostgres, seedSqlite, UNUSED_WEBHOOK_URL, USERS, WEBHOOK_OWNER, writeJsonServerDb } from './seed.js';

export const SMALL = 10_000;
export const LARGE = 1_000_000;

export interface PgStore {
  readonly url: string;
  readonly token: string;
}

export interface Stores {
  /** Whether any scenario selected uses the small store (all but the mix). */
  readonly needSmall: boolean;
  /** The small SQLite store's path; its copies are this path with a suffix (.nocache, .jwt, .wh0, …). */
  readonly small: string;
  readonly smallToken: string;
  readonly large: string;
  readonly largeToken: string;
  /** The json-server database file: the small store's plants. */
  readonly jsonServerDb: string;
  readonly pgSmall: PgStore | undefined;
  readonly pgLarge: PgStore | undefined;
}

const usesSmall: readonly ScenarioName[] = ['list', 'create', 'scale', 'webhooks', 'jwt', 'metrics', 'feed'];
// scale-out uses the small PostgreSQL store alone: its instances share one database, SQLite's cannot.
const usesPostgres: readonly ScenarioName[] = ['list', 'create', 'scale', 'metrics', 'scale-out'];

export async function seedStores(bench: Bench): Promise<Stores> {
  process.stderr.write('seeding stores…\n');
  const small = join(bench.dir, 'small.db');
  const large = join(bench.dir, 'large.db');
  const jsonServerDb = join(bench.dir, 'json-server.json');
  const needSmall = usesSmall.some((n) => bench.has(n));
  const smallToken = needSmall ? await seedSqlite(small, SMALL) : '';
  const largeToken = bench.has('scale') ? await seedSqlite(large, LARGE) : '';
  if (needSmall) {
    // Copies before the other user's endpoint: scenario 3 as it was, scenario 4's pair with none, the feed's.
    for (const copy of ['s3', 's3-nocache', 'wh0', 'wh1', 'feed']) copyFileSync(small, `${small}.${copy}`);
    await registerWebhook(`sqlite:${small}`, UNUSED_WEBHOOK_URL, WEBHOOK_OWNER);
    // One server per SQLite store: every other server gets a copy (same plants, same token).
    for (const copy of ['nocache', 'baseline', 'jwt', 'metrics']) copyFileSync(small, `${small}.${copy}`);
  }
  if (bench.has('scale')) copyFileSync(large, `${large}.nocache`);
  if (bench.has('list') || bench.has('create')) writeJsonServerDb(jsonServerDb, SMALL);
  let pgSmall: PgStore | undefined;
  let pgLarge: PgStore | undefined;
  const postgresUrl = bench.options.postgresUrl;
  if (postgresUrl && usesPostgres.some((n) => bench.has(n))) {
    const tag = Math.random().toString(16).slice(2, 8);
    bench.schemas.push(`bench_small_${tag}`, `bench_large_${tag}`);
    pgSmall = await seedPostgres(postgresUrl, `bench_small_${tag}`, SMALL);
    await registerWebhook(pgSmall.url, UNUSED_WEBHOOK_URL, WEBHOOK_OWNER);
    if (bench.has('scale')) pgLarge = await seedPostgres(postgresUrl, `bench_large_${tag}`, LARGE);
  }
  return { needSmall, small, smallToken, large, largeToken, jsonServerDb, pgSmall, pgLarge };
}

/** The note on the stores, when the small one was used. */
export function storesNote(stores: Stores, bench: Bench): string | undefined {
  if (!stores.needSmall) return undefined;
  return `stores: ${SMALL.toLocaleString('en-US')}${bench.has('scale') ? ` and ${LARGE.toLocaleString('en-US')}` : ''} plants across ${USERS} users; ` +
    `the listing user (${BENCH_USER}) owns 1/${USERS} of them.`;
}
