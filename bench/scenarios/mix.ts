// Scenario 5, the realistic mix (bench/lib/mix.ts): each request a random user's create or list, through
// real cursors the server sealed, against a bare server answering a typical page and a plant; plantstore
// with opaque tokens, with JWTs, on PostgreSQL, and the --baseline build.
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { present, type Bench, type Row, type Target } from '../lib/bench.js';
import {
  collectPages, countPages, CREATE_SHARE, FIRST_PAGE_SHARE, MIX_FIRST_ID, MIX_PLANTS, MIX_USERS, mixOwnerOf, mixUser, seedMixPostgres,
  seedMixSqlite, TAG_SHARE, writeMixData, type MixUserPages,
} from '../lib/mix.js';
import { answersOf, pageOf } from '../lib/requests.js';
import { registerWebhook, UNUSED_WEBHOOK_URL, WEBHOOK_OWNER } from '../lib/seed.js';
import { startBare, startJwks, type System } from '../lib/systems.js';

const TITLE = `5. realistic mix: ${MIX_USERS.toLocaleString('en-US')} users, ${MIX_PLANTS.toLocaleString('en-US')} plants, ${CREATE_SHARE * 100}% creates`;

interface MixStores {
  /** The SQLite store; its copies are this path with .baseline and .jwt. */
  readonly db: string;
  /** One token per user, in the users' order; the PostgreSQL store has tokens of its own. */
  readonly tokens: string[];
  readonly pg: { url: string; tokens: string[] } | undefined;
}

/** The same plants, tokens and cursor key in every SQLite copy; one endpoint of another user in each store. */
async function seedStores(bench: Bench): Promise<MixStores> {
  const db = join(bench.dir, 'mix.db');
  const tokens = await seedMixSqlite(db);
  await registerWebhook(`sqlite:${db}`, UNUSED_WEBHOOK_URL, WEBHOOK_OWNER);
  for (const copy of [...(bench.options.baseline === undefined ? [] : ['baseline']), 'jwt']) copyFileSync(db, `${db}.${copy}`);
  let pg: MixStores['pg'];
  if (bench.options.postgresUrl) {
    const schema = `bench_mix_${Math.random().toString(16).slice(2, 8)}`;
    bench.schemas.push(schema);
    pg = await seedMixPostgres(bench.options.postgresUrl, schema);
    await registerWebhook(pg.url, UNUSED_WEBHOOK_URL, WEBHOOK_OWNER);
  }
  return { db, tokens, pg };
}

/** A target and the data file of its wrk script: the users' tokens and the pages the server sealed. */
interface Loaded {
  readonly system: System;
  readonly data: string;
}

/**
 * Walks `system`'s pages and writes them as its data file. A baseline is loaded with the cursors it
 * sealed: another release may seal cursors in another form (version 2 cursors are not opened by earlier
 * releases). Every server walks the same pages before the load, so that page caches start alike.
 */
async function walk(bench: Bench, system: System, tokens: readonly string[], file: string, expected?: number): Promise<Loaded & { pages: MixUserPages[] }> {
  const pages = await collectPages(system.url, tokens);
  if (expected !== undefined && countPages(pages) !== expected) throw new Error(`${system.name} has ${countPages(pages)} pages of the mix, not ${expected}`);
  const data = join(bench.dir, file);
  writeMixData(data, pages);
  return { system, data, pages };
}

/** The mix's servers, each with its data file; the JWT server with a JWT per user instead of a token. */
async function startServers(bench: Bench, stores: MixStores) {
  const { db, tokens, pg } = stores;
  const baseline = bench.options.baseline;
  const sqlite = await bench.featured('plantstore sqlite', `sqlite:${db}`, 'mix-sqlite');
  const postgres = pg ? await bench.featured('plantstore postgres', pg.url, 'mix-pg') : undefined;
  const baselineSqlite = baseline === undefined ? undefined : await bench.featured('baseline sqlite', `sqlite:${db}.baseline`, 'mix-baseline-sqlite', {}, baseline);
  const baselinePostgres = baseline === undefined || !pg ? undefined : await bench.featured('baseline postgres', pg.url, 'mix-baseline-pg', {}, baseline);
  // Real cursors, sealed with each store's key: collected once per store over HTTP (the baseline's
  // copy shares its store's key; instances on one PostgreSQL schema share theirs).
  process.stderr.write('collecting the mix\'s pages…\n');
  const opaque = await walk(bench, sqlite, tokens, 'mix-sqlite.tsv');
  const pgLoaded = postgres && pg ? await walk(bench, postgres, pg.tokens, 'mix-pg.tsv') : undefined;
  // The same with a JWT per user instead of an opaque token: the same cursors open, bound to the user.
  const jwks = await bench.start(startJwks(mixUser(0), 'plantstore-bench', {
    users: Array.from({ length: MIX_USERS }, (_, i) => mixUser(i)), file: join(bench.dir, 'mix-jwts.txt'),
  }));
  const jwtServer = await bench.featured('plantstore sqlite, JWT', `sqlite:${db}.jwt`, 'mix-sqlite-jwt',
    { JWT_JWKS_URL: jwks.jwksUrl, JWT_AUDIENCE: 'plantstore-bench' });
  const jwt = { system: jwtServer, data: join(bench.dir, 'mix-jwt.tsv') };
  writeMixData(jwt.data, opaque.pages.map((u, i) => ({ ...u, token: jwks.tokens[i] as string })));
  // The walk over the JWT server also shows that the same pages are there for JWTs.
  const walkedJwt = countPages(await collectPages(jwtServer.url, jwks.tokens));
  if (walkedJwt !== countPages(opaque.pages)) throw new Error(`the mix's JWT server has ${walkedJwt} pages, the opaque one ${countPages(opaque.pages)}`);
  const pages = countPages(opaque.pages);
  const baselines = {
    sqlite: baselineSqlite && (await walk(bench, baselineSqlite, tokens, 'mix-baseline-sqlite.tsv', pages)),
    postgres: pg && baselinePostgres ? await walk(bench, baselinePostgres, pg.tokens, 'mix-baseline-pg.tsv', pages) : undefined,
  };
  return { opaque, jwt, jwtTokens: jwks.tokens, postgres: pgLoaded, baselines };
}

/**
 * The bare server answers the bytes of a typical page (a user's first: 20 plants and a next link) to
 * every GET, and a plant to every POST; the JWT server must answer that page too.
 */
async function startBareMix(bench: Bench, stores: MixStores, servers: Awaited<ReturnType<typeof startServers>>): Promise<System> {
  const typical = servers.opaque.pages.findIndex((u) => (u.groups[0]?.length ?? 0) > 1);
  // The create is below the counted range.
  const answers = await answersOf(servers.opaque.system.url, stores.tokens[typical] as string, MIX_FIRST_ID - MIX_USERS + typical);
  const jwtPage = await pageOf(servers.jwt.system.url, servers.jwtTokens[typical] as string);
  if (jwtPage.status !== 200 || jwtPage.body !== answers.list.body) {
    throw new Error(`the mix's JWT list does not answer what the opaque-token list does (${jwtPage.status})`);
  }
  return bench.start(startBare(answers));
}

export async function mix(bench: Bench): Promise<void> {
  process.stderr.write('seeding the mix…\n');
  const started = Date.now();
  const stores = await seedStores(bench);
  const servers = await startServers(bench, stores);
  process.stderr.write(`mix ready in ${Math.round((Date.now() - started) / 1000)} s\n`);
  const bare = await startBareMix(bench, stores, servers);
  const target = (loaded: Loaded | undefined): Target | undefined => loaded && bench.target(loaded.system, 'mix', undefined, loaded.data);
  const t = {
    bare: bench.target(bare, 'mix', undefined, servers.opaque.data),
    sqlite: bench.target(servers.opaque.system, 'mix', undefined, servers.opaque.data),
    jwt: bench.target(servers.jwt.system, 'mix', undefined, servers.jwt.data),
    postgres: target(servers.postgres),
    baselineSqlite: target(servers.baselines.sqlite),
    baselinePostgres: target(servers.baselines.postgres),
  };
  await bench.rounds(TITLE, present(t.bare, t.sqlite, t.jwt, t.postgres, t.baselineSqlite, t.baselinePostgres));
  const vsBare = (target: Target): Row => ({ scenario: '', target, reference: t.bare, referenceName: 'bare' });
  bench.report.rows.push(
    { scenario: TITLE, target: t.bare },
    { ...vsBare(t.sqlite), goal: 0.35, p99Goal: true },
    { scenario: '', target: t.jwt, reference: t.sqlite, referenceName: 'opaque', goal: 0.95 },
    ...present(t.postgres, t.baselineSqlite, t.baselinePostgres).map(vsBare),
  );
  const { db, pg } = stores;
  const durability = bench.report.durability;
  durability.push(['mix, sqlite', t.sqlite, `sqlite:${db}`, mixOwnerOf], ['mix, sqlite, JWT', t.jwt, `sqlite:${db}.jwt`, mixOwnerOf]);
  if (t.postgres && pg) durability.push(['mix, postgres', t.postgres, pg.url, mixOwnerOf]);
  if (t.baselineSqlite) durability.push(['mix, baseline sqlite', t.baselineSqlite, `sqlite:${db}.baseline`, mixOwnerOf]);
  if (t.baselinePostgres && pg) durability.push(['mix, baseline postgres', t.baselinePostgres, pg.url, mixOwnerOf]);
  const walkedPages = countPages(servers.opaque.pages);
  bench.report.summaries.push(`mix: each request a random user's (of ${MIX_USERS.toLocaleString('en-US')}, each with a token of its own and 20–200 plants); ` +
    `${CREATE_SHARE * 100}% creates; lists ${TAG_SHARE * 100}% with a tag filter, ${FIRST_PAGE_SHARE * 100}% the first page and the others ` +
    `a page further on, through ${(walkedPages - servers.opaque.pages.length * 4).toLocaleString('en-US')} cursors the server sealed (of ${walkedPages.toLocaleString('en-US')} pages walked per store)`);
}
