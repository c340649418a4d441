import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { FATAL, logLines, runCli } from '../process.js';

function emptyDir(t: TestContext): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'plantstore-no-store-')));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Everything under `dir`, as relative paths. */
function contents(dir: string): string[] {
  return readdirSync(dir, { recursive: true }).map(String).sort();
}

/** The default store (DATABASE_URL unset), as the commands name it. */
const DEFAULT = { DATABASE_URL: undefined };

test('a server that fails on a port in use leaves no new store behind', async (t) => {
  const dir = emptyDir(t);
  const taken = createServer();
  taken.listen(0, '127.0.0.1');
  await once(taken, 'listening');
  t.after(() => taken.close());
  const port = (taken.address() as { port: number }).port;
  for (const args of [['--port', String(port)], ['--port', '0', '--metrics-port', String(port)]]) {
    const res = await runCli(['serve', ...args], { ...DEFAULT, LOG_LEVEL: 'info' }, dir);
    assert.equal(res.code, 1, res.stdout);
    assert.deepEqual(logLines(res.stdout).map((l) => l.level), [FATAL], res.stdout);
    assert.match(logLines(res.stdout)[0]?.msg ?? '', /EADDRINUSE/);
    assert.deepEqual(contents(dir), [], `serve ${args.join(' ')} created nothing`);
  }
});
