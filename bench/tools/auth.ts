// Cost of the authenticate hook (src/http/auth/hooks.ts) for a token it has accepted before: an
// opaque token and an RS256 JWT (the run prints its length) on an app configured for both, as the
// bench's JWT rows run. Each call gets a new header string, as Node's HTTP parser makes one
// per request; the cost of making it is printed apart and not counted. With --baseline DIR, the hook of
// another checkout's build (DIR/dist) is measured in the same rounds. Prints medians of the rounds.
//   node --import tsx bench/tools/auth.ts [--baseline DIR]
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { pino } from 'pino';
import { DEFAULTS } from '../../src/config/load.js';
import * as current from '../../src/http/auth/hooks.js';
import type { Hook } from '../../src/http/auth/verifier.js';
import type { Store, TokenRecord } from '../../src/store/store.js';
import { generateToken } from '../../src/domain/token.js';

const { values: args } = parseArgs({ options: { baseline: { type: 'string' } } });

const { privateKey, publicKey } = await generateKeyPair('RS256');
const keySet = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'bench', alg: 'RS256', use: 'sig' }] });
const provider = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(keySet));
await new Promise<void>((done) => provider.listen(0, '127.0.0.1', done));
const settings = {
  ...DEFAULTS,
  jwtJwksUrl: `http://127.0.0.1:${(provider.address() as AddressInfo).port}/jwks`,
  jwtAudience: 'bench',
};
const jwt = await new SignJWT({ sub: 'alice', scope: 'plants:read' })
  .setProtectedHeader({ alg: 'RS256', kid: 'bench', typ: 'JWT' })
  .setAudience('bench')
  .setExpirationTime('1h')
  .sign(privateKey);
const opaque = generateToken();

// Only the hook is measured: the store answers every token's read with one record, at once.
const record: TokenRecord = {
  id: 1, user: 'alice', scopes: ['plants:read'], admin: false, name: null, createdAt: new Date(), expiresAt: null, revokedAt: null,
};
// Both shapes: the Store as facets (this build) and as it was before them (an older baseline).
const findTokenByHash = async () => record;
const store = { tokens: { findTokenByHash }, findTokenByHash } as unknown as Store;
const log = pino({ level: 'silent' });
const app = { hasRequestDecorator: () => true } as never;

type Module = typeof current;
const builds: Array<[string, Module]> = [['this build', current]];
if (args.baseline !== undefined) {
  // The hook's module was authenticate.js before the files moved into folders by role, hooks.js since.
  const found = ['hooks.js', 'authenticate.js'].map((name) => join(resolve(args.baseline as string), 'dist/http/auth', name)).find((path) => existsSync(path));
  if (found === undefined) throw new Error(`--baseline: no built authenticate hook in ${args.baseline}/dist/http/auth (npm run build there first)`);
  builds.push(['baseline', (await import(found)) as Module]);
}

interface Request { headers: { authorization: string }; log: typeof log; principal: unknown }
const call = (hook: Hook, header: string): Request => {
  const request: Request = { headers: { authorization: header }, log, principal: null };
  hook(request as never, {} as never, (error) => {
    if (error) throw error;
  });
  return request;
};

const cases: Array<[string, () => void]> = [];
for (const [name, module] of builds) {
  const hook = module.authentication(app, { store, verifiers: module.verifiers(store, settings, log) });
  for (const [kind, token] of [['opaque', opaque], ['JWT', jwt]] as const) {
    const bytes = Buffer.from(`Bearer ${token}`, 'latin1');
    // The first call verifies (a store read, or the key set fetched and the signature checked).
    const first = call(hook, bytes.toString('latin1'));
    await new Promise((done) => setTimeout(done, 200));
    if (first.principal === null) throw new Error(`${name}, ${kind}: not accepted`);
    cases.push([`${name}, ${kind}`, () => call(hook, bytes.toString('latin1'))]);
  }
}
for (const [kind, token] of [['opaque', opaque], ['JWT', jwt]] as const) {
  const bytes = Buffer.from(`Bearer ${token}`, 'latin1');
  cases.push([`the header string alone, ${kind}`, () => bytes.toString('latin1')]);
}

const N = 20_000;
const times = new Map<string, number[]>(cases.map(([name]) => [name, []]));
for (let round = 0; round < 31; round++) {
  for (const [name, run] of round % 2 === 0 ? cases : [...cases].reverse()) {
    // A turn of the event loop between blocks: an opaque token's cache entry, read again every 2 s, is
    // filled in by a promise reaction, as between requests.
    await new Promise((done) => setImmediate(done));
    const t = process.hrtime.bigint();
    for (let i = 0; i < N; i++) run();
    if (round > 0) times.get(name)?.push(Number(process.hrtime.bigint() - t) / N / 1000);
  }
}
provider.close();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const header = (kind: string) => median(times.get(`the header string alone, ${kind}`) ?? []);
for (const [name] of cases) {
  const m = median(times.get(name) ?? []);
  const kind = name.endsWith('JWT') ? 'JWT' : 'opaque';
  const net = name.startsWith('the header') ? '' : ` (${(m - header(kind)).toFixed(2)} µs beyond the header string)`;
  console.log(`${name}: ${m.toFixed(2)} µs a call${net}`);
}
console.log(`medians of 30 rounds of ${N} calls each, the cases interleaved (JWT: ${jwt.length} characters)`);
