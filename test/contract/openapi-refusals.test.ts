import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
// Fastify's own validator (a dependency of fastify), as a schema-driven client would use one: with and
// without a regular expression's Unicode mode, since clients differ there.
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { buildApp } from '../../src/app.js';
import { userNameProblem } from '../../src/domain/principal.js';
import { MAX_SECRET_OVERLAP_MS } from '../../src/domain/webhook.js';
import { CursorCodec } from '../../src/http/routes/plants/cursor.js';
import { createLogger } from '../../src/logger.js';
import { LateStore } from '../../src/store/wrappers/late.js';
import { parseOverlap, parseRfc3339 } from '../../src/webhooks/operations.js';
import { endpointUrlProblem } from '../../src/webhooks/register.js';

/*
 * The published schemas against the server's own checks, field by field: a client that generates or
 * checks requests from /openapi.json must not send what the server refuses, nor refuse what it takes.
 * Where a schema can say the whole rule, the two must agree on every text tried; where it cannot (a
 * URL's host, a name's Unicode categories, a cursor's seal), the schema must take whatever the server
 * takes, refuse what it can, and its description must say the rest.
 */

interface Field {
  readonly schema: Record<string, unknown>;
  readonly description: string;
  /** The schema's verdict, as a validator with Unicode mode (ajv's default, and the server's) gives it. */
  accepts(text: unknown): boolean;
  /** The same without Unicode mode, as some clients' validators read a pattern. */
  acceptsWithoutUnicode(text: unknown): boolean;
}

const withUnicode = new Ajv({ strict: false, unicodeRegExp: true });
const withoutUnicode = new Ajv({ strict: false, unicodeRegExp: false });

async function publishedFields(): Promise<Record<string, Field>> {
  const app = await buildApp({ store: new LateStore(), logger: createLogger('silent') });
  try {
    await app.ready();
    const doc = app.swagger() as unknown as {
      components: { schemas: Record<string, { properties: Record<string, Record<string, unknown>> }> };
      paths: Record<string, Record<string, { parameters: Array<{ name: string; description?: string; schema: Record<string, unknown> }> }>>;
    };
    const schemas = doc.components.schemas;
    const query = (name: string) => {
      const p = doc.paths['/plants']?.get?.parameters.find((x) => x.name === name);
      assert.ok(p, `GET /plants ${name}`);
      return { ...p.schema, description: p.description ?? p.schema.description };
    };
    const fields: Record<string, Record<string, unknown>> = {
      'NewWebhook.url': schemas.NewWebhook!.properties.url!,
      'WebhookUpdate.url': schemas.WebhookUpdate!.properties.url!,
      'WebhookRecovery.since': schemas.WebhookRecovery!.properties.since!,
      'WebhookSecretRotation.overlap': schemas.WebhookSecretRotation!.properties.overlap!,
      'NewPlant.tag': schemas.NewPlant!.properties.tag!,
      'GET /plants tag': query('tag'),
      'NewToken.user': schemas.NewToken!.properties.user!,
      'NewToken.name': schemas.NewToken!.properties.name!,
      'GET /plants cursor': query('cursor'),
    };
    return Object.fromEntries(
      Object.entries(fields).map(([name, schema]) => {
        const { description, ...rule } = schema;
        const u = withUnicode.compile(rule);
        const plain = withoutUnicode.compile(rule);
        return [name, { schema, description: String(description), accepts: (t: unknown) => u(t), acceptsWithoutUnicode: (t: unknown) => plain(t) }];
      }),
    );
  } finally {
    await app.close();
  }
}

const fields = await publishedFields();
const field = (name: string): Field => fields[name] as Field;

/** No unpaired surrogate: encodeURIComponent, which must write UTF-8, throws on one. */
function wellFormed(text: string): boolean {
  try {
    encodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/** Both validators' verdicts agree with `expected`, named in the message. */
function assertVerdict(f: Field, name: string, text: string, expected: boolean): void {
  assert.equal(f.accepts(text), expected, `${name} ${JSON.stringify(text)}: ${expected ? 'taken' : 'refused'} by the server`);
  assert.equal(f.acceptsWithoutUnicode(text), expected, `${name} ${JSON.stringify(text)} without Unicode mode`);
}

/** Strings of UTF-16 code units, lone surrogates and U+0000 included, emoji too. */
const anyText = (maxLength: number) =>
  fc.string({
    unit: fc.oneof(
      fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)),
      fc.constantFrom('\u0000', '\uD800', '\uDFFF', '🌵', '\uD83C', ' ', '\u202E', '\u200D', 'a', '/', ':'),
    ),
    maxLength,
  });

test('the six refusals a schema-driven client used to be surprised by are each refused by the published schema too', () => {
  const refused: Array<[string, string]> = [
    ['NewWebhook.url', ''],
    ['WebhookUpdate.url', ''],
    ['WebhookRecovery.since', '0000-00-00T00:00:00Z'],
    ['WebhookSecretRotation.overlap', '8d'],
    ['WebhookSecretRotation.overlap', '169h'],
    ['NewPlant.tag', 'a\u0000b'],
    ['NewPlant.tag', 'a\uD800b'],
    ['GET /plants tag', '\u0000'],
    ['NewToken.user', ''],
  ];
  for (const [name, text] of refused) assertVerdict(field(name), name, text, false);
  // A cursor of the right form that was never issued: no schema can tell, so its description says it.
  const cursor = field('GET /plants cursor');
  assert.equal(cursor.accepts('AAAAAAAAAAAAAAAAAAAAAA'), true);
  assert.match(cursor.description, /did not issue/);
  assert.match(cursor.description, /40003/);
});

test('since: the schema takes exactly the RFC 3339 times the server reads, the calendar and the clock included', () => {
  const f = field('WebhookRecovery.since');
  const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
  const candidate = fc
    .tuple(
      fc.oneof(fc.integer({ min: 0, max: 9999 }).map((y) => String(y).padStart(4, '0')), fc.constantFrom('1900', '2000', '2024', '2100', '2400', '0000')),
      two(14), two(33), fc.constantFrom('T', 't', ' '), two(25), two(61), two(61),
      fc.constantFrom('', '.5', '.123456789', '.'),
      fc.oneof(fc.constantFrom('Z', 'z', '', '+00:00'), fc.tuple(fc.constantFrom('+', '-'), two(25), two(61)).map(([s, h, m]) => `${s}${h}:${m}`)),
    )
    .map(([y, mo, d, t, h, mi, s, frac, off]) => `${y}-${mo}-${d}${t}${h}:${mi}:${s}${frac}${off}`);
  fc.assert(
    fc.property(candidate, (text) => {
      assertVerdict(f, 'since', text, parseRfc3339(text) !== null);
    }),
    { numRuns: 5000 },
  );
  for (const text of ['2024-02-29T00:00:00Z', '2000-02-29T00:00:00Z', '1900-02-29T00:00:00Z', '2100-02-29T00:00:00Z', '2025-04-31T00:00:00Z',
    '2025-12-31T23:59:59.999-23:59', '2016-12-31T23:59:60Z', '2025-01-01T00:00:00+24:00']) {
    assertVerdict(f, 'since', text, parseRfc3339(text) !== null);
  }
});

test('overlap: the schema takes exactly the durations up to 7 days the server takes, a zero in any unit included', () => {
  const f = field('WebhookSecretRotation.overlap');
  const limits = { s: MAX_SECRET_OVERLAP_MS / 1000, m: MAX_SECRET_OVERLAP_MS / 60_000, h: MAX_SECRET_OVERLAP_MS / 3_600_000, d: 7 };
  for (const [unit, max] of Object.entries(limits)) {
    for (const n of [0, 1, 9, 10, max - 1, max, max + 1, max * 10]) assertVerdict(f, 'overlap', `${n}${unit}`, parseOverlap(`${n}${unit}`) !== null);
  }
  const candidate = fc
    .tuple(fc.constantFrom('', '0', '00', '-', '+'), fc.oneof(fc.nat({ max: 20 }), fc.nat({ max: 1_000_000 })), fc.constantFrom('', 's', 'm', 'h', 'd', 'w', 'ms', ' '))
    .map(([prefix, n, unit]) => `${prefix}${n}${unit}`);
  fc.assert(fc.property(fc.oneof(candidate, fc.string({ maxLength: 8 })), (text) => {
    assertVerdict(f, 'overlap', text, parseOverlap(text) !== null);
  }), { numRuns: 5000 });
});

test('tag: the schema takes exactly what the server stores (up to 100 characters, no U+0000, no unpaired surrogate), in either regular expression mode', () => {
  const stored = (text: string) => [...text].length <= 100 && !text.includes('\u0000') && wellFormed(text);
  for (const name of ['NewPlant.tag', 'GET /plants tag']) {
    const f = field(name);
    for (const text of ['', '🌵', '🌵'.repeat(100), 'x'.repeat(101), '\uDFFF\uD800', '\uD83C', 'a\u0000']) assertVerdict(f, name, text, stored(text));
    fc.assert(fc.property(anyText(40), (text) => assertVerdict(f, name, text, stored(text))), { numRuns: 3000 });
  }
});

test('url: the schema takes every URL the server takes, and refuses what a pattern can say it refuses', () => {
  for (const name of ['NewWebhook.url', 'WebhookUpdate.url']) {
    const f = field(name);
    assert.match(f.description, /host/, `${name}: what the schema cannot say is in its description`);
    const candidate = fc
      .tuple(
        fc.constantFrom('http://', 'https://', 'HTTPS://', 'http:', 'ftp://', ' http://', '', 'http://u:p@', '//'),
        fc.constantFrom('hooks.example', '[2001:db8::1]', '127.0.0.1', 'exa mple.com', 'x', ''),
        anyText(6),
      )
      .map(([scheme, host, rest]) => `${scheme}${host}${rest}`);
    fc.assert(
      fc.property(fc.oneof(candidate, anyText(12)), (text) => {
        // Private addresses allowed: what is left is the form, which is what a schema can check.
        if (endpointUrlProblem(text, true) === null) assertVerdict(f, name, text, true);
        // The characters and the scheme a pattern says: refused by both.
        if (!/^https?:/i.test(text) || /[\u0000-\u0020\u007f-\u00a0\u2028\u2029]/.test(text) || !wellFormed(text)) {
          assert.notEqual(endpointUrlProblem(text, true), null, JSON.stringify(text));
          assertVerdict(f, name, text, false);
        }
      }),
      { numRuns: 3000 },
    );
    // Lengths count code points on both sides: 2048 emoji are 2048 characters.
    const long = `https://hooks.example/${'🌵'.repeat(2048 - 'https://hooks.example/'.length)}`;
    assert.equal(endpointUrlProblem(long, true), null);
    assertVerdict(f, name, long, true);
    assertVerdict(f, name, `${long}x`, false);
  }
});

test('user and token name: the schema takes every name the server takes, refuses the empty and the over-long, and describes the rest', () => {
  for (const name of ['NewToken.user', 'NewToken.name']) {
    const f = field(name);
    assert.match(f.description, /1 to 128 characters/);
    assert.match(f.description, /control characters/);
    for (const text of ['', 'x'.repeat(129), '🌵'.repeat(129)]) assertVerdict(f, name, text, false);
    for (const text of ['x', '🌵'.repeat(128), 'Ada Lovelace']) assertVerdict(f, name, text, true);
    fc.assert(fc.property(anyText(40), (text) => {
      if (userNameProblem(text) === null) assertVerdict(f, name, text, true);
    }), { numRuns: 3000 });
  }
});

test('cursor: every cursor the server issues fits the schema; the schema refuses what the server cannot open by its form', () => {
  const f = field('GET /plants cursor');
  const codec = new CursorCodec(randomBytes(32));
  fc.assert(
    fc.property(fc.nat({ max: Number.MAX_SAFE_INTEGER }), fc.option(fc.string({ maxLength: 10 }), { nil: null }), fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
      (position, owner, tag) => {
        assertVerdict(f, 'cursor', codec.seal(position, { owner, tag }), true);
      }),
    { numRuns: 500 },
  );
  fc.assert(
    fc.property(fc.string({ maxLength: 50 }), (text) => {
      if (!f.accepts(text)) assert.equal(codec.open(text, { owner: null }), null, JSON.stringify(text));
    }),
    { numRuns: 2000 },
  );
});
