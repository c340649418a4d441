import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import { test, type TestContext } from 'node:test';
import { logFormatFor } from '../../src/logger.js';
import { testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { eventually } from '../helpers/eventually.js';
import { BIN, FATAL, logLines, runCli, spawnServer } from '../helpers/process.js';

/** A pretty line: local time with its offset, the level's name, the pid, the message. */
const PRETTY_LINE = /^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} [+-]\d{4}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) \((\d+)\): (.*)$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const COLOUR = /\u001b\[[0-9;]*m/g;

/** The pretty lines of `out` (an entry's fields follow it on indented lines, which are left out). */
function prettyLines(out: string): Array<{ level: string; pid: number; msg: string }> {
  return out.split(/\r?\n/).flatMap((line) => {
    const m = PRETTY_LINE.exec(line);
    return m ? [{ level: m[1] as string, pid: Number(m[2]), msg: m[3] as string }] : [];
  });
}

function assertNoJson(out: string): void {
  for (const line of out.split(/\r?\n/)) assert.doesNotMatch(line, /^\s*\{"level"/, `a JSON line in pretty output: ${line}`);
}

/** `plantstore serve --port 0` with stdout and stderr read as text, whatever their format. */
function serveRaw(t: TestContext, env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0'], { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: 'pipe' });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, exited, out: () => out, err: () => err };
}

/** Waits until `done()` holds; fails with `what` and the output if the process ends first. */
async function until(done: () => boolean, exited: Promise<unknown>, what: () => string): Promise<void> {
  let ended = false;
  void exited.then(() => (ended = true));
  await eventually(() => {
    if (done()) return true;
    assert.ok(!ended, `the process ended first: ${what()}`);
    return undefined;
  }, what);
}

async function takenPort(t: TestContext): Promise<number> {
  const taken = createServer();
  taken.listen(0, '127.0.0.1');
  await once(taken, 'listening');
  t.after(() => taken.close());
  return (taken.address() as { port: number }).port;
}

test('LOG_FORMAT=auto is pretty on a terminal and JSON elsewhere; json and pretty are what they say', () => {
  assert.equal(logFormatFor('auto', true), 'pretty');
  assert.equal(logFormatFor('auto', false), 'json');
  for (const terminal of [true, false]) {
    assert.equal(logFormatFor('json', terminal), 'json');
    assert.equal(logFormatFor('pretty', terminal), 'pretty');
  }
});

test('by default, on a pipe, every line is JSON with pino\'s numeric level and an ISO 8601 time', async (t) => {
  const { url } = await testDatabase(t);
  const server = spawnServer(t, { DATABASE_URL: url });
  await server.ready;
  assert.equal(await server.stop('SIGTERM'), 0);
  const lines = logLines(server.logs());
  assert.ok(lines.some((l) => l.msg === 'plantstore ready'), server.logs());
  assert.ok(lines.some((l) => l.msg === 'shutting down'), server.logs());
  for (const line of lines) {
    assert.equal(typeof line.level, 'number', JSON.stringify(line));
    assert.match(line.time, ISO_TIME, JSON.stringify(line));
    assert.equal(new Date(line.time).toISOString(), line.time);
    assert.ok(Math.abs(Date.parse(line.time) - Date.now()) < 10 * 60_000, `a time of this run: ${line.time}`);
  }
  assert.equal(server.errors(), '');
});

test('LOG_FORMAT=pretty prints readable lines (time, level name, message, fields), no JSON, no colour on a pipe, and never a token', async (t) => {
  const { url } = await testDatabase(t);
  const server = serveRaw(t, { DATABASE_URL: url, LOG_FORMAT: 'pretty', LOG_LEVEL: 'debug' });
  await until(() => /INFO \(\d+\): plantstore ready/.test(server.out()), server.exited, server.out);
  const address = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(server.out())?.[1];
  assert.ok(address, server.out());
  const token = 'pst_neverIssuedButSecretAnyway0123456789abcdef';
  const res = await fetch(`${address}/plants`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 401);
  await until(() => server.out().includes('bearer token refused'), server.exited, server.out);
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);

  const out = server.out();
  const lines = prettyLines(out);
  assert.ok(lines.some((l) => l.level === 'INFO' && l.msg === 'plantstore ready'), out);
  assert.ok(lines.some((l) => l.level === 'DEBUG' && l.msg === 'bearer token refused'), out);
  assert.ok(lines.some((l) => l.level === 'INFO' && l.msg === 'shutting down'), out);
  assert.ok(lines.every((l) => l.pid === server.child.pid), out);
  // The fields of an entry follow it, indented: the store named in the ready line, the signal in the last.
  assert.match(out, /plantstore ready\n {4}store: "(sqlite|postgres)"/);
  assert.match(out, /shutting down\n {4}signal: "SIGTERM"/);
  assertNoJson(out);
  assert.doesNotMatch(out, COLOUR, 'no colour when stdout is not a terminal');
  assert.ok(!out.includes(token), 'the token is not logged');
  assert.ok(!out.includes(token.slice(4)), 'nor any of it');
  assert.equal(server.err(), '');
});

test('pretty lines logged just before process.exit are written: a second SIGTERM during the drain', async (t) => {
  const { url } = await testDatabase(t);
  const token = (await cli(['token', 'create', '--user', 'alice'], { env: { DATABASE_URL: url } })).stdout.trim();
  const server = serveRaw(t, { DATABASE_URL: url, LOG_FORMAT: 'pretty', DRAIN_TIMEOUT: '60s' });
  await until(() => server.out().includes('plantstore ready'), server.exited, server.out);
  const port = Number(/Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(server.out())?.[1]);
  // A create whose body never ends keeps the drain open.
  const socket = connect(port, '127.0.0.1');
  t.after(() => socket.destroy());
  await once(socket, 'connect');
  // Answered once, the connection is one the server has accepted: the signal cannot overtake it.
  let answer = '';
  socket.on('data', (d) => (answer += d));
  socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  await until(() => answer.endsWith('{"status":"ok"}'), server.exited, () => answer);
  socket.write(`POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"id"`);
  server.child.kill('SIGTERM');
  await until(() => server.out().includes('shutting down'), server.exited, server.out);
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 1);
  const lines = prettyLines(server.out());
  assert.ok(lines.some((l) => l.level === 'INFO' && l.msg === 'shutting down'), server.out());
  assert.deepEqual(lines.slice(-1).map((l) => [l.level, l.msg]), [['ERROR', 'second signal: exiting at once']], server.out());
});

/** `script` (util-linux) runs a command on a pseudo-terminal: the server's stdout is then a terminal. */
function scriptAvailable(t: TestContext): boolean {
  if (spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0) return true;
  if (process.env.CI === 'true') assert.fail('`script` (util-linux, Debian package bsdutils) is needed for the terminal test');
  t.skip('`script` (util-linux) is not installed: the terminal test needs a pseudo-terminal');
  return false;
}

test('by default, on a terminal (a real pseudo-terminal), lines are pretty and coloured; LOG_FORMAT=json still gives JSON there', async (t) => {
  if (!scriptAvailable(t)) return;
  const { url } = await testDatabase(t);
  for (const format of ['auto', 'json'] as const) {
    const command = `exec '${process.execPath}' '${BIN}' serve --port 0`;
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'info', LOG_FORMAT: format, TERM: 'xterm' },
      stdio: 'pipe',
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const exited = once(child, 'exit').then(([code]) => code as number | null);
    let pid: number | undefined;
    t.after(() => {
      if (pid !== undefined) spawnSync('kill', ['-KILL', String(pid)]);
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    await until(() => out.includes('plantstore ready'), exited, () => out);
    const plain = out.replace(COLOUR, '');
    if (format === 'auto') {
      assert.match(out, COLOUR, 'coloured on a terminal');
      const lines = prettyLines(plain);
      assert.ok(lines.some((l) => l.level === 'INFO' && l.msg === 'plantstore ready'), plain);
      assertNoJson(plain);
      pid = lines[0]?.pid;
    } else {
      assert.doesNotMatch(out, COLOUR);
      const lines = logLines(plain.replace(/\r/g, ''));
      assert.ok(lines.some((l) => l.level === 30 && l.msg === 'plantstore ready'), plain);
      pid = lines[0]?.pid as number | undefined;
    }
    assert.ok(pid, plain);
    process.kill(pid, 'SIGTERM');
    assert.equal(await exited, 0, `${format}: the server's exit code, through script -e: ${plain}`);
  }
});

test('a port in use: exit 1 and one fatal line, in JSON or pretty as LOG_FORMAT says, nothing on stderr', async (t) => {
  const { url } = await testDatabase(t);
  const port = await takenPort(t);
  const message = new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use by another process \\(EADDRINUSE\\)`);
  const serveOn = (format: string) => runCli(['serve', '--port', String(port)], { DATABASE_URL: url, LOG_FORMAT: format, LOG_LEVEL: 'info' });

  const json = await serveOn('json');
  assert.equal(json.code, 1, json.stdout);
  assert.equal(json.stderr, '');
  const fatal = logLines(json.stdout).filter((l) => l.level >= 50);
  assert.equal(fatal.length, 1, json.stdout);
  assert.equal(fatal[0]?.level, FATAL);
  assert.match(fatal[0]?.msg ?? '', message);
  assert.match(fatal[0]?.time ?? '', ISO_TIME);

  const pretty = await serveOn('pretty');
  assert.equal(pretty.code, 1, pretty.stdout);
  assert.equal(pretty.stderr, '');
  const lines = prettyLines(pretty.stdout).filter((l) => l.level === 'ERROR' || l.level === 'FATAL');
  assert.deepEqual(lines.map((l) => l.level), ['FATAL'], pretty.stdout);
  assert.match(lines[0]?.msg ?? '', message);
  assertNoJson(pretty.stdout);
});

test('a refused configuration or command line of serve: exit 2 and one fatal line, in LOG_FORMAT when that is valid itself', async () => {
  const cases = [
    { args: [], env: { LOG_FORMAT: 'xml' }, format: 'json', message: /^LOG_FORMAT must be one of auto, json, pretty, got "xml"$/ },
    { args: ['--port', 'http'], env: { LOG_FORMAT: 'pretty' }, format: 'pretty', message: /^--port must be a whole number from 0 to 65535/ },
    { args: ['--bogus', '--log-format', 'pretty'], env: {}, format: 'pretty', message: /^unknown option --bogus; see "plantstore serve --help"/ },
    { args: ['--log-format', 'json'], env: { LOG_FORMAT: 'pretty', RATE_LIMIT: 'fast' }, format: 'json', message: /^RATE_LIMIT must look like/ },
  ] as const;
  for (const { args, env, format, message } of cases) {
    const label = `${JSON.stringify(env)} serve ${args.join(' ')}`;
    // In-process: a refusal is logged and returned as the exit code before anything opens or listens.
    const res = await cli(['serve', ...args], { env: { LOG_LEVEL: 'info', ...env } });
    assert.equal(res.code, 2, `${label}: ${res.stdout}${res.stderr}`);
    assert.equal(res.stderr, '', label);
    if (format === 'json') {
      const lines = logLines(res.stdout);
      assert.deepEqual(lines.map((l) => l.level), [FATAL], label);
      assert.match(lines[0]?.msg ?? '', message, label);
    } else {
      const lines = prettyLines(res.stdout);
      assert.deepEqual(lines.map((l) => l.level), ['FATAL'], label);
      assert.match(lines[0]?.msg ?? '', message, label);
      assertNoJson(res.stdout);
    }
  }
});
