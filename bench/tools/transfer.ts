// Export and import of a large store, timed with /usr/bin/time -v (wall time, peak RSS) on the real CLI:
//   node --import tsx bench/tools/transfer.ts [PLANTS]        (default 1,000,000; npm run build first)
// SQLite → file → fresh SQLite, and, when PostgreSQL answers at PLANTSTORE_BENCH_DATABASE_URL (default the
// test database), file → PostgreSQL (a schema of its own, dropped afterwards) → file. Not part of npm test.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { dropPostgresSchema, seedSqlite } from '../lib/seed.js';

const PLANTS = Number(process.argv[2] ?? 1_000_000);
const PG_URL = process.env.PLANTSTORE_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BIN = new URL('../../bin/plantstore.js', import.meta.url).pathname;
const SCHEMA = 'bench_transfer';

interface Measured {
  readonly step: string;
  readonly seconds: number;
  readonly rssMb: number;
}

/** Runs the CLI under /usr/bin/time -v and reads its wall time and peak resident set size. */
function timed(step: string, args: string[], databaseUrl: string): Measured {
  const run = spawnSync('/usr/bin/time', ['-v', process.execPath, BIN, ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl },
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (run.status !== 0) throw new Error(`${step} failed: ${run.stderr}`);
  return parse(step, run.stderr);
}

function parse(step: string, report: string): Measured {
  const wall = /Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)/.exec(report);
  const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(report);
  if (!wall || !rss) throw new Error(`no /usr/bin/time report in:\n${report}`);
  const seconds = Number(wall[1] ?? 0) * 3600 + Number(wall[2]) * 60 + Number(wall[3]);
  return { step, seconds, rssMb: Number(rss[1]) / 1024 };
}

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'plantstore-bench-transfer-'));
try {
  const source = join(dir, 'source.db');
  console.error(`seeding ${PLANTS} plants into ${source}`);
  await seedSqlite(source, PLANTS);
  const results: Measured[] = [];
  const file = join(dir, 'sqlite.ndjson');
  results.push(timed('export SQLite → file', ['export', '--out', file], `sqlite:${source}`));
  results.push(timed('import file → fresh SQLite', ['import', file], `sqlite:${join(dir, 'target.db')}`));
  if (await reachable(PG_URL)) {
    await dropPostgresSchema(PG_URL, SCHEMA);
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${SCHEMA}`).finally(() => admin.end());
    const u = new URL(PG_URL);
    u.searchParams.set('options', `-c search_path=${SCHEMA}`);
    try {
      results.push(timed('import file → fresh PostgreSQL', ['import', file], u.toString()));
      results.push(timed('export PostgreSQL → file', ['export', '--out', join(dir, 'postgres.ndjson')], u.toString()));
    } finally {
      await dropPostgresSchema(PG_URL, SCHEMA);
    }
  } else {
    console.error(`PostgreSQL at ${PG_URL} is not reachable: its steps are skipped`);
  }
  console.log(`${PLANTS} plants, file ${(statSync(file).size / 1024 / 1024).toFixed(0)} MB`);
  console.log('| step | time | peak RSS |\n|---|---|---|');
  for (const r of results) console.log(`| ${r.step} | ${r.seconds.toFixed(1)} s | ${r.rssMb.toFixed(0)} MB |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
