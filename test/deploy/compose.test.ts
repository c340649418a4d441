import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { PlantStore, type Plant } from '@plantstore/client';
import { ROOT } from '../helpers/checkout.js';
import { freePort } from '../helpers/doc-session.js';
import { eventually } from '../helpers/eventually.js';
import { answers200, buildImage, PLANTSTORE_IMAGE, podman, run, standIns, type StandIns } from './podman.js';

/**
 * deploy/compose.yaml as a user starts it (podman-compose up -d), on the stand-in images: PostgreSQL,
 * two plantstore instances and nginx, whose port is the only one published.
 */

const project = `plantstore-test-${randomBytes(4).toString('hex')}`;
const network = `${project}_default`;
let url: string;
let env: Record<string, string>;
let images: StandIns;

const compose = (args: readonly string[]) => run('podman-compose', ['-p', project, '-f', join(ROOT, 'deploy/compose.yaml'), ...args], { env });
const instance = (n: number) => `${project}_plantstore_${n}`;
const headers = (secret: string) => ({ authorization: `Bearer ${secret}`, 'content-type': 'application/json' });

after(async () => {
  // With their anonymous volumes (the image's /data), which podman-compose's down leaves.
  const containers = (await run('podman', ['ps', '-a', '-q', '--filter', `label=io.podman.compose.project=${project}`])).stdout.split('\n').filter(Boolean);
  if (containers.length > 0) await run('podman', ['rm', '-f', '-v', '-t', '0', ...containers]);
  await compose(['down', '-v', '-t', '0']);
  await run('podman', ['volume', 'rm', '-f', `${project}_postgres-data`]);
  await run('podman', ['network', 'rm', '-f', network]);
});

before(async () => {
  images = await standIns();
  await buildImage(images);
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  env = {
    POSTGRES_PASSWORD: randomBytes(12).toString('hex'), PLANTSTORE_IMAGE, POSTGRES_IMAGE: images.postgres, NGINX_IMAGE: images.nginx,
    PLANTSTORE_PORT: String(port), WEBHOOK_ALLOW_PRIVATE: 'on',
  };
  const up = await compose(['up', '-d']);
  assert.equal(up.code, 0, `podman-compose up: ${up.stdout}\n${up.stderr}`);
  await answers200(`${url}/readyz`, 'the stack ready through nginx', async () => (await compose(['logs'])).stdout.slice(-4000));
});

/** A token made as docs/deploy.md says: the CLI inside an instance, against the stack's database. */
async function token(user: string): Promise<string> {
  const made = await compose(['exec', '-T', 'plantstore', 'plantstore', 'token', 'create', '--user', user]);
  // podman-compose 1.0.3 exits 0 whatever the command did, and prints its own lines on stdout.
  const secret = /^pst_\S+$/m.exec(made.stdout)?.[0];
  assert.ok(secret, `a token on stdout: ${made.stdout}\n${made.stderr}\n${(await run('podman', ['ps', '-a', '--filter', `label=io.podman.compose.project=${project}`])).stdout}`);
  return secret;
}

/** Every plant of the token's user, page after page, through nginx. */
async function listed(secret: string): Promise<Plant[]> {
  const plants: Plant[] = [];
  for await (const plant of new PlantStore({ baseUrl: url, token: secret }).list()) plants.push(plant);
  return plants;
}

/** A node process in a container of its own on the stack's network; resolves with its output. */
async function onNetwork(script: string, extra: readonly string[] = []): Promise<string> {
  return podman(['run', '--rm', '--network', network, ...extra, images.node, 'node', '-e', script]);
}

test('a plant created through nginx is listed through it', async () => {
  const secret = await token('alice');
  const created = await fetch(`${url}/plants`, { method: 'POST', headers: headers(secret), body: '{"id": 9007199254740993, "name": "Monstera", "tag": "indoor"}' });
  assert.equal(created.status, 200);
  assert.deepEqual(await listed(secret), [{ name: 'Monstera', tag: 'indoor' }]);
});

test('a webhook for each plant created through either instance is delivered once', async (t) => {
  const secret = await token('carol');
  // A receiver on the stack's network: it answers 204 and says, on its published port, what it got.
  const receiver = `${project}_receiver`;
  const script = `const got = []; require('node:http').createServer((req, res) => {
    let body = ''; req.on('data', (d) => (body += d)); req.on('end', () => {
      if (req.method === 'GET') return res.end(JSON.stringify(got));
      got.push({ id: req.headers['webhook-id'], body }); res.writeHead(204).end();
    });
  }).listen(9000);`;
  await podman(['run', '-d', '--name', receiver, '--network', network, '--network-alias', 'receiver', '-p', '127.0.0.1::9000', images.node, 'node', '-e', script]);
  t.after(() => run('podman', ['rm', '-f', '-t', '0', receiver]));
  const received = `http://127.0.0.1:${(await podman(['port', receiver, '9000'])).trim().split(':').pop()}`;
  await answers200(received, 'the receiver listening', async () => (await run('podman', ['logs', receiver])).stderr);
  // And by its name on the stack's network, as the instances will reach it: the network's DNS server
  // learns a new container's name a moment after it starts.
  const byName = "fetch('http://receiver:9000/').then((r) => console.log(r.status), () => console.log(0))";
  await eventually(async () => ((await onNetwork(byName)).trim() === '200' ? true : undefined),
    async () => `the receiver reachable by name on the network\n${(await run('podman', ['logs', receiver])).stderr}`);

  const endpoint = await fetch(`${url}/webhooks`, { method: 'POST', headers: headers(secret), body: JSON.stringify({ url: 'http://receiver:9000/hook' }) });
  assert.equal(endpoint.status, 201, await endpoint.clone().text());
  const plants = Array.from({ length: 10 }, (_, i) => `Fern ${i}`);
  for (const [i, name] of plants.entries()) {
    const created = await fetch(`${url}/plants`, { method: 'POST', headers: headers(secret), body: JSON.stringify({ id: 100 + i, name }) });
    assert.equal(created.status, 200);
  }
  const { id } = (await endpoint.json()) as { id: string };
  // Delivered as the store records it: every event's attempt answered, nothing left to send.
  const history = async () => (await (await fetch(`${url}/webhooks/${id}/deliveries?limit=100`, { headers: headers(secret) })).json()) as Array<{ state: string }>;
  await eventually(async () => {
    const deliveries = await history();
    return deliveries.length === plants.length && deliveries.every((d) => d.state === 'delivered') ? true : undefined;
  }, async () => `ten deliveries recorded\n${JSON.stringify(await history())}\n${(await compose(['logs', 'plantstore'])).stdout.split('\n').filter((l) => /webhook|deliver|error/i.test(l)).slice(-40).join('\n')}`);
  const got = (await (await fetch(received)).json()) as Array<{ id: string; body: string }>;
  assert.deepEqual(got.map((d) => JSON.parse(d.body).name).sort(), plants);
  assert.equal(new Set(got.map((d) => d.id)).size, plants.length, 'each event once');
});

test('one instance stopped and started again under creates through nginx: exit 0, every acknowledged plant listed once', async () => {
  const secret = await token('dave');
  const acknowledged: string[] = [];
  let done = false;
  const writer = (async () => {
    for (let i = 1; !done; i++) {
      const name = `Palm ${i}`;
      const answer = await fetch(`${url}/plants`, { method: 'POST', headers: headers(secret), body: JSON.stringify({ id: i, name }) }).catch(() => undefined);
      if (answer?.status === 200) acknowledged.push(name);
    }
  })();
  const acks = (n: number) => eventually(() => (acknowledged.length >= n ? true : undefined), `${n} creates acknowledged`);
  await acks(10);
  await podman(['stop', '-t', '20', instance(2)]);
  assert.equal((await podman(['inspect', '--format', '{{.State.ExitCode}}', instance(2)])).trim(), '0', 'drained, exit 0');
  const whileStopped = acknowledged.length;
  await acks(whileStopped + 10);
  await podman(['start', instance(2)]);
  await eventually(async () => ((await run('podman', ['healthcheck', 'run', instance(2)])).code === 0 ? true : undefined), 'the instance healthy again');
  await acks(acknowledged.length + 10);
  done = true;
  await writer;
  const names = (await listed(secret)).map((p) => p.name);
  for (const name of acknowledged) assert.ok(names.includes(name), `${name} acknowledged and listed`);
  assert.equal(new Set(names).size, names.length, 'no plant twice');
});

test('the failed-authentication limit counts the client nginx saw, whatever X-Forwarded-For it sends, and not nginx', async () => {
  // AUTH_FAILURE_LIMIT's default: 60 a minute for one client address, counted by each instance, which
  // nginx takes in turn; then 429. This machine is one client, even when it names others in
  // X-Forwarded-For (nginx writes the header anew).
  const bad = (forwardedFor?: string) => fetch(`${url}/plants`, { headers: { authorization: 'Bearer pst_wrong', ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) } });
  const statuses = [];
  for (let i = 0; i < 130; i++) statuses.push((await bad(`203.0.113.${i % 250}`)).status);
  assert.deepEqual([...new Set(statuses.slice(0, 60))], [401], 'no instance has counted more than 60 yet');
  assert.deepEqual([...new Set(statuses.slice(-4))], [429], `each instance has counted more than 60: ${statuses.join(' ')}`);
  assert.equal((await bad()).status, 429);
  // Another client, a container on the stack's network, is not limited with it: the limit is not nginx's.
  const other = await onNetwork("fetch('http://nginx/plants', { headers: { authorization: 'Bearer pst_wrong' } }).then((r) => console.log(r.status))");
  assert.equal(other.trim(), '401');
});
// Last: this machine's address stays refused for the rest of the minute.
