import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { testDatabase } from '../helpers/app.js';
import { closedPort } from '../helpers/jwt-provider.js';
import { cli } from '../helpers/cli.js';
import { fatalMessages, runCli, spawnServer } from '../helpers/process.js';
import { tempDir } from '../helpers/transfer.js';
import { eventually } from '../helpers/eventually.js';

// How doctor, serve --help and the server's log show the settings: secrets in URLs masked, each value on
// its line. On each backend, since doctor reads the store too.

const SECRET = 'hunter2';
/** The settings from the file alone: none of the test environment's. */
const CLEAN = { JWT_ISSUER: undefined, JWT_JWKS_URL: undefined, JWT_AUDIENCE: undefined, PORT: undefined, PLANTSTORE_CONFIG: undefined };

test('doctor says a settings file every user can read holds a password wherever its URL holds it: user part, password=, sslpassword=', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'p.env');
  const port = await closedPort();
  const readable = /^attention settings: .*p\.env holds a password \(in DATABASE_URL\) and every user of this machine can read it \(chmod 600, or 640 for the server's group\)$/m;
  for (const url of [`postgres://app:${SECRET}@127.0.0.1:${port}/plants`, `postgres://app@127.0.0.1:${port}/plants?password=${SECRET}`, `postgres://app@127.0.0.1:${port}/plants?sslmode=require&sslpassword=${SECRET}`]) {
    writeFileSync(file, `DATABASE_URL=${url}\n`);
    chmodSync(file, 0o644);
    const doctor = await cli(['doctor', '--config', file], { env: { ...CLEAN, DATABASE_URL: undefined } });
    assert.equal(doctor.code, 1);
    assert.match(doctor.stdout, readable, url);
    assert.ok(!`${doctor.stdout}${doctor.stderr}`.includes(SECRET), doctor.stdout);
    const json = await cli(['doctor', '--json', '--config', file], { env: { ...CLEAN, DATABASE_URL: undefined } });
    assert.ok(!json.stdout.includes(SECRET), json.stdout);
    chmodSync(file, 0o600);
    assert.doesNotMatch((await cli(['doctor', '--config', file], { env: { ...CLEAN, DATABASE_URL: undefined } })).stdout, readable, url);
  }
});

test('JWT_JWKS_URL with user:password@ is refused by serve, doctor and serve --help, never repeating the password', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'jwt.env');
  writeFileSync(file, `LOG_FORMAT=json\nJWT_AUDIENCE=api\nJWT_JWKS_URL=https://app:${SECRET}@idp.example/jwks\n`);
  const env = { ...CLEAN, DATABASE_URL: (await testDatabase(t)).url, LOG_FORMAT: undefined };
  const refusal = `${file}:3: JWT_JWKS_URL must not hold a user name or password (user:password@): fetch refuses credentials in a URL, and a key set is public`;
  // Before, the server started with it: a hang bound well short of the default.
  const serve = await runCli(['serve', '--port', '0', '--config', file], env, dir, { hangMs: 20_000 });
  assert.equal(serve.code, 2, serve.stdout);
  assert.match(fatalMessages(serve.stdout), new RegExp(`^${refusal.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}, got "https://app:\\*\\*\\*@idp\\.example/jwks"$`));
  const doctor = await cli(['doctor', '--config', file], { env });
  assert.equal(doctor.code, 1);
  assert.ok(doctor.stdout.includes(`attention settings: refused: ${refusal}`), doctor.stdout);
  const help = await cli(['serve', '--help', '--config', file], { env });
  assert.ok(help.stdout.includes(`The settings as given now are refused: ${refusal}`), help.stdout);
  for (const res of [serve, doctor, help]) assert.ok(!`${res.stdout}${res.stderr}`.includes(SECRET));
});

test('a secret parameter of JWT_JWKS_URL is masked in doctor, its --json, serve --help and the server\'s log', async (t) => {
  const dir = tempDir(t);
  const jwks = `http://127.0.0.1:${await closedPort()}/jwks?api_key=${SECRET}`;
  const shown = jwks.replace(SECRET, '***');
  const env = { ...CLEAN, DATABASE_URL: (await testDatabase(t)).url, JWT_AUDIENCE: 'api', JWT_JWKS_URL: jwks };
  const doctor = await cli(['doctor'], { env });
  assert.ok(doctor.stdout.includes(`note      setting: JWT_JWKS_URL=${shown} (from environment)`), doctor.stdout);
  assert.ok(doctor.stdout.includes(`attention identity provider: ${shown} does not answer with keys: ${shown}: `), doctor.stdout);
  const json = await cli(['doctor', '--json'], { env });
  assert.equal(JSON.parse(json.stdout).identityProvider.jwksUrl, shown);
  const help = await cli(['serve', '--help'], { env });
  // The help wraps its column at spaces: the URL and its source may sit on two lines.
  assert.match(help.stdout, new RegExp(`now: ${shown.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\s+\\(from\\s+environment\\)`));

  const server = spawnServer(t, { ...env, LOG_FORMAT: 'json' }, dir);
  await server.ready;
  await eventually(() => (server.logs().includes('identity provider cannot be reached') ? true : undefined), 'the provider warning');
  assert.ok(server.logs().includes(shown), server.logs());
  for (const res of [doctor, json, help]) assert.ok(!`${res.stdout}${res.stderr}`.includes(SECRET));
  assert.ok(!`${server.logs()}${server.errors()}`.includes(SECRET), server.logs());
});

test('a settings value holding a line break is shown escaped on its one line by doctor and serve --help; a refusal too', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'lines.env');
  writeFileSync(file, 'JWT_AUDIENCE="api\\nok        fake"\n');
  const env = { ...CLEAN, DATABASE_URL: (await testDatabase(t)).url };
  const doctor = await cli(['doctor', '--config', file], { env });
  assert.match(doctor.stdout, /^note {6}setting: JWT_AUDIENCE=api\\nok {8}fake \(from .*lines\.env:1\)$/m);
  assert.doesNotMatch(doctor.stdout, /^ok {8}fake/m);
  const help = await cli(['serve', '--help', '--config', file], { env });
  assert.match(help.stdout, /now: api\\nok {8}fake \(from\s+\S*lines\.env:1\)$/m);
  assert.doesNotMatch(help.stdout, /^ok {8}fake/m);

  writeFileSync(file, 'PORT="80\\nok        fake"\n');
  const refused = await runCli(['migrate', '--config', file], env, dir);
  assert.equal(refused.code, 2);
  assert.equal(refused.stderr, `plantstore: ${file}:1: PORT must be a whole number from 0 to 65535, got "80\\nok        fake"\n`);
});
