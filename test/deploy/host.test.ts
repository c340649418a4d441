import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { ROOT } from '../helpers/checkout.js';
import { answers200, buildImage, PLANTSTORE_IMAGE, podman, run, standIns } from './podman.js';

/**
 * The host install's files: deploy/plantstore.service as systemd reads it, and deploy/nginx-tls.conf
 * terminating TLS in front of a plantstore that listens on loopback, as on a host running the unit.
 */

test('systemd-analyze verify finds nothing to say about deploy/plantstore.service', async () => {
  const verified = await run('systemd-analyze', ['verify', join(ROOT, 'deploy/plantstore.service')]);
  assert.equal(verified.code, 0, verified.stderr);
  assert.equal(verified.stderr + verified.stdout, '', 'no warning: a key systemd ignores would be one');
});

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** An HTTPS request that trusts `ca` only. */
function https(url: string, ca: Buffer, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers, ca, servername: 'localhost' }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A self-signed certificate for localhost in a folder nginx can read; its certificate. */
async function certificate(t: TestContext): Promise<{ dir: string; cert: Buffer }> {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const made = await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
    '-keyout', join(dir, 'privkey.pem'), '-out', join(dir, 'fullchain.pem')]);
  assert.equal(made.code, 0, made.stderr);
  for (const file of ['privkey.pem', 'fullchain.pem']) chmodSync(join(dir, file), 0o644); // a test key, for nginx's worker user
  chmodSync(dir, 0o755);
  return { dir, cert: readFileSync(join(dir, 'fullchain.pem')) };
}

test('nginx-tls.conf in front of plantstore on loopback: HTTP redirects to HTTPS, the API answers through TLS with HSTS', async (t) => {
  const images = await standIns();
  await buildImage(images);
  const { dir, cert } = await certificate(t);
  // A pod: one network namespace, as one host, so that nginx reaches plantstore at 127.0.0.1:8080.
  const pod = `plantstore-tls-${randomBytes(4).toString('hex')}`;
  await podman(['pod', 'create', '--name', pod, '-p', '127.0.0.1::443', '-p', '127.0.0.1::80']);
  t.after(() => run('podman', ['pod', 'rm', '-f', '-t', '0', pod]));
  const app = `${pod}-plantstore`;
  await podman(['volume', 'create', pod]);
  t.after(() => run('podman', ['volume', 'rm', '-f', pod]));
  await podman(['run', '-d', '--pod', pod, '--name', app, '-e', 'HOST=127.0.0.1', '-e', 'TRUST_PROXY=loopback', '-v', `${pod}:/data`, PLANTSTORE_IMAGE]);
  await podman(['run', '-d', '--pod', pod, '--name', `${pod}-nginx`,
    '-v', `${join(ROOT, 'deploy/nginx-tls.conf')}:/etc/nginx/conf.d/default.conf:ro`, '-v', `${dir}:/etc/plantstore/tls:ro`, images.nginx]);
  const port = async (inside: number) => (await podman(['port', app, String(inside)])).trim().split(':').pop();
  const base = `https://localhost:${await port(443)}`;
  // localhost, as the certificate names it, but the published address is 127.0.0.1's.
  const url = (path: string) => base.replace('localhost', '127.0.0.1') + path;
  await answers200(url('/readyz'), 'plantstore ready through nginx', async () => (await run('podman', ['pod', 'logs', pod])).stdout.slice(-3000),
    async (u) => (await https(u, cert)).status);

  const plain = await fetch(`http://127.0.0.1:${await port(80)}/plants?limit=1`, { redirect: 'manual' });
  assert.equal(plain.status, 308);
  assert.match(plain.headers.get('location') ?? '', /^https:\/\/[^/]+\/plants\?limit=1$/);

  const secret = (await podman(['exec', app, 'plantstore', 'token', 'create', '--user', 'alice'])).trim().split('\n').pop()!;
  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  const created = await https(url('/plants'), cert, { method: 'POST', headers, body: '{"id": 1, "name": "Monstera"}' });
  assert.equal(created.status, 200, created.body);
  assert.equal(created.body, '{"name":"Monstera"}');
  assert.match(String(created.headers['strict-transport-security']), /max-age=\d+/);
  const listed = await https(url('/plants?limit=10'), cert, { headers });
  assert.equal(listed.body, '[{"name":"Monstera"}]');
  // An error is still the API's own JSON body, not a page of nginx's.
  const refused = await https(url('/plants'), cert, { headers: { authorization: 'Bearer pst_wrong' } });
  assert.equal(refused.status, 401);
  assert.match(refused.body, /^\{"error":40101,"message":/);
});
