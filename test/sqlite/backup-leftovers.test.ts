import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync, writeFileSync } from 'node:fs';
import { watch } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from '../../src/store/sqlite/driver.js';
import { cli } from '../helpers/cli.js';
import { BIN } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite-spawn.js';

/** Resolves once a file whose name `matches` is in `dir` (inotify, not polling). */
async function fileAppears(dir: string, matches: RegExp): Promise<string> {
  const stop = new AbortController();
  const events = watch(dir, { signal: stop.signal });
  const found = () => readdirSync(dir).find((name) => matches.test(name));
  try {
    let name = found();
    if (name !== undefined) return name;
    for await (const _ of events) {
      name = found();
      if (name !== undefined) return name;
    }
    throw new Error('the watcher ended');
  } finally {
    stop.abort();
  }
}

/** A process id that no process has any more: a process that ran and was reaped. */
async function deadPid(): Promise<number> {
  const child = spawn('true');
  await once(child, 'exit');
  return child.pid as number;
}

test('the next backup or export removes the secret-holding temporary files a backup killed with SIGKILL left, and no one else\'s', async (t) => {
  const dir = tempDir(t);
  const store = join(dir, 'store.db');
  const env = { DATABASE_URL: `sqlite:${store}` };
  assert.equal((await cli(['token', 'create', '--user', 'alice'], { env })).code, 0);
  const out = tempDir(t);

  // A backup that cannot finish: the store (in rollback-journal mode, for this test) is write-locked, so
  // SQLite's backup waits with its temporary copy open; it is killed there, as by kill -9 or the OOM killer.
  const lock = new Database(store);
  lock.pragma('journal_mode = DELETE');
  lock.exec("BEGIN EXCLUSIVE; INSERT INTO plants (owner, id, name) VALUES ('bob', 1, 'held')");
  const killed = spawn(process.execPath, [BIN, 'backup', '--out', join(out, 'nightly.db')], { env: { ...process.env, ...env }, stdio: 'ignore' });
  const leftover = await fileAppears(out, /^\.nightly\.db\..*\.tmp$/);
  killed.kill('SIGKILL');
  await once(killed, 'exit');
  lock.exec('ROLLBACK');
  lock.close();
  assert.ok(readdirSync(out).includes(leftover), 'the killed backup left its temporary copy');

  // Files the next backup must leave alone: a live process's (this one's), another machine's, and any
  // name that is not exactly a temporary copy's.
  const here = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
  const dead = await deadPid();
  const kept = [
    `.nightly.db.${here}-${process.pid}.0123456789ab.tmp`,
    `.nightly.db.${here === '00000000' ? '11111111' : '00000000'}-${dead}.0123456789ab.tmp`,
    `.nightly.db.${here}-${dead}.0123456789ab.tmp.bak`,
    `nightly.db.${here}-${dead}.0123456789ab.tmp`,
    `.nightly.db.0123456789ab.tmp`,
  ];
  const stale = [`.other.db.${here}-${dead}.0123456789ab.tmp`, `.other.db.${here}-${dead}.0123456789ab.tmp-journal`];
  for (const name of [...kept, ...stale]) writeFileSync(join(out, name), 'secret', { mode: 0o600 });

  const next = await cli(['backup', '--out', join(out, 'nightly.db')], { env });
  assert.equal(next.code, 0, next.stderr);
  assert.match(next.stderr, /removed what interrupted backups or exports had left beside .*nightly\.db: /);
  assert.deepEqual(readdirSync(out).sort(), ['nightly.db', ...kept].sort(), 'only the killed backup\'s and the dead process\'s files are gone');

  // export clears them as well.
  const exportStale = `.move.ndjson.${here}-${dead}.fedcba987654.tmp`;
  writeFileSync(join(out, exportStale), 'secret', { mode: 0o600 });
  const exported = await cli(['export', '--out', join(out, 'move.ndjson')], { env });
  assert.equal(exported.code, 0, exported.stderr);
  assert.match(exported.stderr, new RegExp(`removed what interrupted exports or backups had left beside .*move\\.ndjson: ${exportStale.replaceAll('.', '\\.')}`));
  assert.deepEqual(readdirSync(out).sort(), ['move.ndjson', 'nightly.db', ...kept].sort());
});
