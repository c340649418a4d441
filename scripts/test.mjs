// Runs the test suite once per backend: SQLite always, PostgreSQL when reachable. In CI (CI=true) an
// unreachable PostgreSQL fails the run instead of skipping it. The two runs go at the same time: many
// files spend most of their time waiting (for a server to start, a timer, a webhook receiver), and
// one backend's files fill the other's waits. Meanwhile each prints a line per finished file
// (scripts/test-progress.mjs); each run's full report is printed when it ends.
//   test/{api,store,cli,process}/*.test.ts  both backends (test/helpers/app.ts picks the store from the environment)
//   test/{unit,contract}/*.test.ts     no store of their own: once, in the SQLite run
//   test/sqlite/*.test.ts              SQLite only (file paths, the default store)
//   test/postgres/*.test.ts            PostgreSQL only (several instances, migrations racing, outages)
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/test';
const files = (dir) => readdirSync(dir).filter((f) => f.endsWith('.test.ts')).sort().map((f) => `${dir}/${f}`);
const only = process.argv.slice(2); // e.g. `npm test -- sqlite` runs one backend
// Folders whose files take longest (real processes, packages) first, so that no long file starts last
// while the others are done.
const BOTH = ['test/process', 'test/store', 'test/api', 'test/cli'].flatMap(files);
const ONCE = ['test/contract', 'test/unit'].flatMap(files);

const reports = mkdtempSync(join(tmpdir(), 'plantstore-test-reports-'));
process.on('exit', () => rmSync(reports, { recursive: true, force: true }));

/** One backend's run: node --test over its files; resolves to whether every test passed, and its report. */
function run(backend, testFiles, databaseUrl) {
  console.log(`=== ${backend} on Node ${process.version}: ${testFiles.length} test files ===`);
  const report = join(reports, `${backend}.txt`);
  const env = { ...process.env, PLANTSTORE_TEST_DATABASE_URL: databaseUrl, PLANTSTORE_TEST_RUN_LABEL: backend.padEnd(8) };
  const args = [
    '--import', 'tsx', '--test', '--test-concurrency=3',
    '--test-reporter=spec', `--test-reporter-destination=${report}`,
    '--test-reporter=./scripts/test-progress.mjs', '--test-reporter-destination=stdout',
    ...testFiles,
  ];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'], env });
    child.on('close', (code) => {
      let text;
      try {
        text = readFileSync(report, 'utf8');
      } catch (error) {
        text = `no report from the ${backend} run: ${error.message}\n`;
      }
      resolve({ ok: code === 0, report: text });
    });
  });
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

const runs = {};
if (only.length === 0 || only.includes('postgres')) {
  const url = process.env.PLANTSTORE_TEST_DATABASE_URL || DEFAULT_URL;
  if (await reachable(url)) {
    runs.postgres = () => run('postgres', [...files('test/postgres'), ...BOTH], url);
  } else if (process.env.CI === 'true') {
    console.error('CI=true: the PostgreSQL run is required (.ci/run starts PostgreSQL first).');
    runs.postgres = async () => ({ ok: false, report: '' });
  } else {
    console.warn('\nWARNING: the PostgreSQL run was SKIPPED. Start PostgreSQL or set PLANTSTORE_TEST_DATABASE_URL.');
  }
}
if (only.length === 0 || only.includes('sqlite')) {
  runs.sqlite = () => run('sqlite', [...files('test/sqlite'), ...ONCE, ...BOTH], '');
}
const started = Object.fromEntries(Object.entries(runs).map(([backend, start]) => [backend, start()]));
// Both reports in full once both runs ended, the SQLite one first, as when the runs went one after the other.
const results = {};
for (const backend of ['sqlite', 'postgres']) {
  if (!(backend in started)) continue;
  const { ok, report } = await started[backend];
  console.log(`\n=== ${backend} on Node ${process.version}: the report ===`);
  process.stdout.write(report);
  results[backend] = ok;
}
console.log(`\n=== Node ${process.version}: ${Object.entries(results).map(([b, ok]) => `${b}: ${ok ? 'passed' : 'FAILED'}`).join(', ')} ===`);
process.exit(Object.values(results).every(Boolean) ? 0 : 1);
