// Runs the test suite once per backend: SQLite always, PostgreSQL when reachable. In CI (CI=true) an
// unreachable PostgreSQL fails the run instead of skipping it.
//   test/{api,store,cli,process}/*.test.ts  both backends (test/helpers/app.ts picks the store from the environment)
//   test/{unit,contract}/*.test.ts     no store of their own: once, in the SQLite run
//   test/sqlite/*.test.ts              SQLite only (file paths, the default store)
//   test/postgres/*.test.ts            PostgreSQL only (several instances, migrations racing, outages)
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import pg from 'pg';

const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/test';
const files = (dir) => readdirSync(dir).filter((f) => f.endsWith('.test.ts')).sort().map((f) => `${dir}/${f}`);
const only = process.argv.slice(2); // e.g. `npm test -- sqlite` runs one backend
const BOTH = ['test/api', 'test/store', 'test/cli', 'test/process'].flatMap(files);
const ONCE = ['test/unit', 'test/contract'].flatMap(files);

function run(backend, testFiles, databaseUrl) {
  console.log(`\n=== ${backend} on Node ${process.version}: ${testFiles.length} test files ===`);
  const env = { ...process.env, PLANTSTORE_TEST_DATABASE_URL: databaseUrl };
  const args = ['--import', 'tsx', '--test', '--test-concurrency=4', '--test-reporter=spec', ...testFiles];
  return spawnSync(process.execPath, args, { stdio: 'inherit', env }).status === 0;
}

async function reachable(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (error) {
    console.error(`PostgreSQL at ${url} is not reachable: ${error.message}`);
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const results = {};
if (only.length === 0 || only.includes('sqlite')) {
  results.sqlite = run('sqlite', [...ONCE, ...BOTH, ...files('test/sqlite')], '');
}
if (only.length === 0 || only.includes('postgres')) {
  const url = process.env.PLANTSTORE_TEST_DATABASE_URL || DEFAULT_URL;
  if (await reachable(url)) {
    results.postgres = run('postgres', [...BOTH, ...files('test/postgres')], url);
  } else if (process.env.CI === 'true') {
    console.error('CI=true: the PostgreSQL run is required (.ci/run starts PostgreSQL first).');
    results.postgres = false;
  } else {
    console.warn('\nWARNING: the PostgreSQL run was SKIPPED. Start PostgreSQL or set PLANTSTORE_TEST_DATABASE_URL.');
  }
}
console.log(`\n=== Node ${process.version}: ${Object.entries(results).map(([b, ok]) => `${b}: ${ok ? 'passed' : 'FAILED'}`).join(', ')} ===`);
process.exit(Object.values(results).every(Boolean) ? 0 : 1);
