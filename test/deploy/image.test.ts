import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test, type TestContext } from 'node:test';
import { ROOT } from '../helpers/checkout.js';
import { eventually } from '../helpers/eventually.js';
import { answers200, buildImage, PLANTSTORE_IMAGE, podman, run, standIns, type StandIns } from './podman.js';

/**
 * The container image users build from the Containerfile: what it holds, and a container of it started,
 * used, stopped and started again on its volume, with a writable root file system and a read-only one.
 */

/** The size budget docs/deploy.md gives what the image adds to its runtime base image, in MB. */
function budgetMb(): number {
  const budget = /image size budget is \*\*(\d+) MB\*\* above/.exec(readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8'))?.[1];
  assert.ok(budget, 'docs/deploy.md states the image size budget ("image size budget is **N MB** above …")');
  return Number(budget);
}

let images: StandIns;
before(async () => {
  images = await standIns();
  await buildImage(images);
});

interface Inspected {
  Size: number;
  Healthcheck?: { Test: string[] };
  Config: { User: string; Env: string[]; Labels: Record<string, string>; ExposedPorts: object; Volumes: object };
}

test('the image runs as a non-root uid, with no compiler, npm, sources, tests or maps, its labels, health check and size within the budget', async (t) => {
  const [image] = JSON.parse(await podman(['image', 'inspect', PLANTSTORE_IMAGE])) as [Inspected];
  assert.equal(image.Config.User, '10001:10001');
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  assert.equal(image.Config.Labels['org.opencontainers.image.version'], version, 'the Containerfile\'s VERSION is package.json\'s');
  assert.equal(image.Config.Labels['org.opencontainers.image.licenses'], 'MIT');
  assert.equal(image.Config.Labels['org.opencontainers.image.source'], 'https://example.invalid/plantstore.git');
  assert.deepEqual(Object.keys(image.Config.ExposedPorts), ['8080/tcp']);
  assert.deepEqual(Object.keys(image.Config.Volumes), ['/data']);
  assert.match(image.Healthcheck?.Test.join(' ') ?? '', /\/readyz/);
  assert.ok(image.Config.Env.includes('DATABASE_URL=sqlite:/data/plantstore.db'), image.Config.Env.join(' '));
  const script = [
    'id -u',
    // Unquoted, so that each list is on one line.
    'echo tools: $(for c in g++ cc make python3 npm npx; do command -v $c; done)',
    'echo app: $(ls /app)',
    'echo stray: $(find /app/bin /app/dist /app/packages \\( -name "*.map" -o -name "*.ts" ! -name "*.d.ts" \\) | head -n 5)',
    'echo addon: $(ls /app/node_modules/better-sqlite3*/)',
  ].join('; ');
  const [uid, ...lines] = (await podman(['run', '--rm', '--entrypoint', 'sh', PLANTSTORE_IMAGE, '-c', script])).trim().split('\n');
  const said = (what: string) => lines.find((l) => l.startsWith(`${what}:`))?.slice(what.length + 1).trim().split(/\s+/).filter(Boolean);
  assert.equal(uid, '10001');
  assert.deepEqual(said('tools'), [], 'no compiler, no npm');
  assert.deepEqual(said('app'), ['LICENSE', 'bin', 'dist', 'node_modules', 'package.json', 'packages']);
  assert.deepEqual(said('stray'), [], 'no sources or maps');
  assert.ok(!said('addon')?.some((f) => f === 'deps' || f === 'src'), `better-sqlite3 without SQLite's sources: ${said('addon')?.join(' ')}`);
  const [base] = JSON.parse(await podman(['image', 'inspect', images.debian])) as [Inspected];
  const [mb, baseMb] = [image.Size / 1e6, base.Size / 1e6];
  const size = `the image is ${mb.toFixed(0)} MB: ${(mb - baseMb).toFixed(0)} MB above its runtime base image (${baseMb.toFixed(0)} MB; budget ${budgetMb()} MB)`;
  t.diagnostic(size);
  console.log(size);
  assert.ok(mb - baseMb <= budgetMb(), size);
});

interface Container {
  readonly name: string;
  readonly url: string;
}

/** Starts a container of the image on `volume`; resolves once /readyz answers 200 on its published port. */
async function start(t: TestContext, volume: string, extra: readonly string[] = []): Promise<Container> {
  const name = `plantstore-test-${randomBytes(4).toString('hex')}`;
  await podman(['run', '-d', '--name', name, '-v', `${volume}:/data`, '-p', '127.0.0.1::8080', ...extra, PLANTSTORE_IMAGE]);
  t.after(() => run('podman', ['rm', '-f', '-t', '0', name]));
  const port = (await podman(['port', name, '8080'])).trim().split(':').pop();
  const url = `http://127.0.0.1:${port}`;
  await answers200(`${url}/readyz`, `${name} ready`, async () => (await run('podman', ['logs', name])).stdout);
  return { name, url };
}

/** `plantstore token create` inside the container, against the server's store. */
async function token(container: Container, user: string): Promise<string> {
  const out = await podman(['exec', container.name, 'plantstore', 'token', 'create', '--user', user]);
  return out.trim().split('\n').pop()!;
}

const headers = (secret: string) => ({ authorization: `Bearer ${secret}`, 'content-type': 'application/json' });

async function names(container: Container, secret: string): Promise<string[]> {
  const listed = await fetch(`${container.url}/plants?limit=1000`, { headers: headers(secret) });
  assert.equal(listed.status, 200);
  return ((await listed.json()) as Array<{ name: string }>).map((p) => p.name).sort();
}

/** Stops the container with SIGTERM, a SIGKILL after `graceSeconds`; its exit code (137: killed). */
async function stop(container: Container, graceSeconds: number): Promise<number> {
  await podman(['stop', '-t', String(graceSeconds), container.name]);
  return Number((await podman(['inspect', '--format', '{{.State.ExitCode}}', container.name])).trim());
}

test('a container serves on its volume: token from exec, create, list, healthy; SIGTERM under creates exits 0 in time and keeps every acknowledged plant, read-only root file system too', async (t) => {
  const volume = `plantstore-test-${randomBytes(4).toString('hex')}`;
  await podman(['volume', 'create', volume]);
  t.after(() => run('podman', ['volume', 'rm', '-f', volume]));

  const first = await start(t, volume);
  const secret = await token(first, 'alice');
  const created = await fetch(`${first.url}/plants`, { method: 'POST', headers: headers(secret), body: '{"id": 1, "name": "Monstera", "tag": "indoor"}' });
  assert.equal(created.status, 200);
  assert.equal(await created.text(), '{"name":"Monstera","tag":"indoor"}');
  assert.deepEqual(await names(first, secret), ['Monstera']);
  // The image's HEALTHCHECK, run now rather than on its interval.
  assert.equal((await run('podman', ['healthcheck', 'run', first.name])).code, 0);

  // Creates keep coming while SIGTERM arrives; those answered 200 must all be there after a restart.
  const acknowledged: string[] = [];
  let stopping = false;
  const writer = (async () => {
    // Until the draining server refuses one (a new connection, or the process gone).
    for (let i = 2; ; i++) {
      const name = `plant-${i}`;
      const answer = await fetch(`${first.url}/plants`, { method: 'POST', headers: headers(secret), body: JSON.stringify({ id: i, name }) }).catch(() => undefined);
      if (answer?.status === 200) acknowledged.push(name);
      else if (stopping) return;
    }
  })();
  await eventually(() => (acknowledged.length >= 5 ? true : undefined), 'five creates acknowledged');
  stopping = true;
  // The server's own bound: DRAIN_TIMEOUT (10 s) and the store's close (5 s); past it podman kills.
  assert.equal(await stop(first, 15), 0, 'exit 0 on SIGTERM, not killed');
  await writer;

  const second = await start(t, volume, ['--read-only', '--tmpfs', '/tmp']);
  const kept = await names(second, secret);
  for (const name of ['Monstera', ...acknowledged]) assert.ok(kept.includes(name), `${name} was acknowledged and is kept`);
  const more = await fetch(`${second.url}/plants`, { method: 'POST', headers: headers(secret), body: '{"id": 100000, "name": "Ficus"}' });
  assert.equal(more.status, 200, 'a read-only root file system: the store on the volume is written');
  assert.ok((await names(second, await token(second, 'bob'))).length === 0, 'another user sees none of alice\'s plants');
  assert.equal(await stop(second, 15), 0);
});
