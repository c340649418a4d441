import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { cli } from '../helpers/cli.js';
import { FATAL, logLines, runCli, spawnServer, type CliResult } from '../helpers/process.js';

/** A start-up that fails must fail at once; one still running after this is a hang. */
const HANG_MS = 15_000;

/** Runs `plantstore serve ARGS` to its end; SIGKILL after HANG_MS (a hung process may ignore SIGTERM). */
function serveUntilExit(args: string[], env: Record<string, string>): Promise<CliResult> {
  return runCli(['serve', ...args], { LOG_LEVEL: 'info', ...env }, undefined, { hangMs: HANG_MS, killSignal: 'SIGKILL' });
}

function scratch(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-startup-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Exit code 1, exactly one fatal log line, matching `line`, and no other line at error level or above;
 * nothing on stderr; nothing that says it listened.
 */
function assertFailedStartup(result: CliResult, line: RegExp, label: string): void {
  assert.notEqual(result.code, null, `${label}: still running after ${HANG_MS} ms (killed); output: ${result.stdout}${result.stderr}`);
  assert.equal(result.code, 1, `${label}: exit code; output: ${result.stdout}${result.stderr}`);
  assert.equal(result.stderr, '', `${label}: nothing on stderr`);
  const errors = logLines(result.stdout).filter((l) => l.level >= 50);
  assert.deepEqual(errors.map((l) => l.level), [FATAL], `${label}: one fatal line, got: ${result.stdout}`);
  assert.match(errors[0]?.msg ?? '', line, label);
  // Not the whole output: the fatal line itself may say "already in use".
  const others = logLines(result.stdout).filter((l) => l.level < 50);
  assert.deepEqual(others.filter((l) => /listening|ready/i.test(l.msg)), [], `${label}: nothing says it listened`);
}

function pathPattern(path: string): RegExp {
  return new RegExp(`${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`);
}

test('a SQLite store that is a directory, or under a regular file, ends start-up at once: exit 1, one fatal line naming the path, never "listening"', async (t) => {
  const dir = scratch(t);
  const file = join(dir, 'a-file');
  writeFileSync(file, 'not a folder');
  const folder = join(dir, 'a-folder');
  mkdirSync(folder);
  for (const [label, path] of [['a directory', folder], ['a path under a regular file', join(file, 'x.db')]] as const) {
    const result = await serveUntilExit(['--port', '0'], { DATABASE_URL: `sqlite:${path}` });
    assertFailedStartup(result, pathPattern(path), label);
  }
});

test('a port already in use ends start-up: exit 1, one fatal line naming the address, never "listening"', async (t) => {
  const taken = createServer();
  taken.listen(0, '127.0.0.1');
  await once(taken, 'listening');
  t.after(() => taken.close());
  const port = (taken.address() as { port: number }).port;
  const result = await serveUntilExit(['--port', String(port)], { DATABASE_URL: `sqlite:${join(scratch(t), 'p.db')}` });
  assertFailedStartup(result, new RegExp(`^cannot listen on 127\\.0\\.0\\.1:${port}: .*in use.*EADDRINUSE`), 'EADDRINUSE');
});

test('an address that is not this machine\'s, or a host name that does not resolve, ends start-up with exit 1', async (t) => {
  const database = `sqlite:${join(scratch(t), 'h.db')}`;
  // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never assigned to a machine.
  const notOurs = await serveUntilExit(['--port', '0', '--host', '192.0.2.1'], { DATABASE_URL: database });
  assertFailedStartup(notOurs, /^cannot listen on 192\.0\.2\.1:0: .*EADDRNOTAVAIL/, 'EADDRNOTAVAIL');
  // .invalid never resolves (RFC 6761 §6.4).
  const unknown = await serveUntilExit(['--port', '0'], { DATABASE_URL: database, HOST: 'no-such-host.invalid' });
  assertFailedStartup(unknown, /^cannot listen on no-such-host\.invalid:0: /, 'unresolvable HOST');
});

// A refused setting ends `serve` before anything starts, so it runs in this process: main's exit code is
// the shell's (test/process/cli.test.ts).
test('a DATABASE_URL whose port is not a number ends start-up before anything listens: one fatal line naming the setting, exit 2, no stack', async () => {
  for (const [label, args, env, message] of [
    ['the environment', ['--port', '0'], { DATABASE_URL: 'postgres://app:hunter2@127.0.0.1:abc/plants' }, 'DATABASE_URL: the port must be a whole number from 1 to 65535'],
    ['the flag', ['--port', '0', '--database-url', 'postgres://app:hunter2@127.0.0.1:99999/plants'], {}, '--database-url: the port must be a whole number from 1 to 65535'],
  ] as const) {
    const result = await cli(['serve', ...args], { env: { LOG_LEVEL: 'info', ...env } });
    assert.equal(result.code, 2, `${label}: exit code; output: ${result.stdout}${result.stderr}`);
    assert.equal(result.stderr, '', `${label}: nothing on stderr`);
    assert.deepEqual(logLines(result.stdout).map((l) => [l.level, l.msg]), [[FATAL, message]], label);
    assert.doesNotMatch(result.stdout, /stack|hunter2/, label);
  }
});

test('SIGTERM while start-up waits for PostgreSQL ends the process at once, exit 0', async (t) => {
  const server = spawnServer(t, { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test', DATABASE_STARTUP_TIMEOUT: '60s' });
  await server.listening;
  while (!server.logs().includes('waiting for PostgreSQL')) await new Promise((r) => setTimeout(r, 20));
  const signalled = Date.now();
  const code = await server.stop('SIGTERM');
  const took = Date.now() - signalled;
  assert.equal(code, 0);
  assert.ok(took < 3000, `exited ${took} ms after SIGTERM`);
  assert.match(server.logs(), /"signal":"SIGTERM","msg":"shutting down"/);
});

test('requests answered 503 while start-up waits for the store log nothing per request: no error, no stack', async (t) => {
  const server = spawnServer(t, { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test', DATABASE_STARTUP_TIMEOUT: '60s', LOG_LEVEL: 'info' });
  const url = await server.listening;
  for (let i = 0; i < 10; i++) {
    for (const path of ['/readyz', '/plants']) {
      const res = await fetch(`${url}${path}`, { headers: { authorization: 'Bearer pst_whatever' } });
      assert.equal(res.status, 503);
      assert.equal(((await res.json()) as { error: number }).error, 50301);
    }
  }
  assert.equal(await server.stop('SIGTERM'), 0);
  const lines = server.logs().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { level: number; reqId?: string });
  assert.deepEqual(lines.filter((l) => l.reqId !== undefined), [], 'no line about a single request');
  assert.deepEqual(lines.filter((l) => l.level >= 50), [], 'nothing at error level');
  assert.doesNotMatch(server.logs(), /stack/);
});
