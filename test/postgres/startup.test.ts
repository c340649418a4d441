import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BACKEND, POSTGRES_URL } from '../helpers/app.js';
import { FATAL, logLines, runCli, type CliResult } from '../helpers/process.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

/** A start-up that fails must fail at once; one still running after this is a hang. */
const HANG_MS = 20_000;

/** The test database's URL with `changes` made to it (a query setting, the user). */
function testUrl(changes: (url: URL) => void): string {
  const url = new URL(POSTGRES_URL as string);
  changes(url);
  return url.toString();
}

/**
 * `plantstore serve` on `url` to its end, with a start-up timeout far longer than HANG_MS: a start-up
 * that waits for the database instead of failing is killed, and says so.
 */
function serveUntilExit(url: string): Promise<CliResult> {
  return runCli(['serve', '--port', '0'], { DATABASE_URL: url, DATABASE_STARTUP_TIMEOUT: '5m', LOG_LEVEL: 'info' }, undefined, {
    hangMs: HANG_MS,
    killSignal: 'SIGKILL',
  });
}

/** Exit 1 on one fatal line matching `line`, nothing on stderr, no wait for the database, nothing that says it listened. */
function assertFailedAtOnce(result: CliResult, line: RegExp): void {
  assert.notEqual(result.code, null, `still running after ${HANG_MS} ms (killed): it waited; output: ${result.stdout}${result.stderr}`);
  assert.equal(result.code, 1, `exit code; output: ${result.stdout}${result.stderr}`);
  assert.equal(result.stderr, '', 'nothing on stderr (node-postgres\'s warnings included)');
  const lines = logLines(result.stdout);
  assert.deepEqual(lines.filter((l) => l.level >= 50).map((l) => l.level), [FATAL], result.stdout);
  assert.match(lines.find((l) => l.level === FATAL)?.msg ?? '', line);
  assert.deepEqual(lines.filter((l) => /listening|waiting|ready/i.test(l.msg) && l.level < 50), [], 'no wait, nothing says it listened');
}

test('sslmode=require against a PostgreSQL without TLS ends start-up at once with one fatal line, no warning on stderr, never listening', async () => {
  const result = await serveUntilExit(testUrl((url) => url.searchParams.set('sslmode', 'require')));
  assertFailedAtOnce(result, /^cannot open the store PostgreSQL at [^:]+:\d+\/\w+: The server does not support SSL connections$/);
});

test('a login PostgreSQL refuses ends start-up before the server listens', async () => {
  const result = await serveUntilExit(testUrl((url) => (url.username = 'no_such_role_for_plantstore')));
  assertFailedAtOnce(result, /role "no_such_role_for_plantstore" does not exist/);
});

test('a CLI command with sslmode=require against a server without TLS fails at once, with no node-postgres warning', async () => {
  const url = testUrl((u) => u.searchParams.set('sslmode', 'require'));
  const result = await runCli(['migrate'], { DATABASE_URL: url, DATABASE_STARTUP_TIMEOUT: '5m' }, undefined, { hangMs: HANG_MS, killSignal: 'SIGKILL' });
  assert.equal(result.code, 1, result.stderr);
  assert.doesNotMatch(result.stderr, /WARNING|waiting for PostgreSQL/, result.stderr);
  assert.match(result.stderr, /\nplantstore: .*The server does not support SSL connections\n$/);
});
