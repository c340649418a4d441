import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { INT64_MAX, INT64_MIN } from '../../src/domain/int64.js';
import { STORABLE_TEXT } from '../../src/domain/plant.js';
import { userNameProblem } from '../../src/domain/principal.js';
import type { PlantRecord } from '../../src/store/transfer.js';
import { decodeLine } from '../../src/transfer/decode.js';
import { headerLine, plantLine } from '../../src/transfer/format.js';
import { readLines } from '../../src/transfer/lines.js';
import { testDatabase } from '../helpers/app.js';
import { exportTo, importFrom, records, tempDir } from '../helpers/transfer.js';

const STORABLE = new RegExp(STORABLE_TEXT, 'u');
const text = (min: number, max: number) =>
  fc.oneof(fc.string({ unit: 'binary', minLength: min, maxLength: max }), fc.string({ unit: 'grapheme', minLength: min, maxLength: max }))
    .filter((s) => STORABLE.test(s) && [...s].length >= min && [...s].length <= max);

/** Any plant the API can store: every valid name, tag (absent, empty or not) and owner, every int64. */
const plantRecord: fc.Arbitrary<PlantRecord> = fc.record({
  owner: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }).filter((s) => userNameProblem(s) === null),
  id: fc.oneof(fc.bigInt({ min: INT64_MIN, max: INT64_MAX }), fc.constantFrom(INT64_MIN, INT64_MAX, 2n ** 53n + 1n, 2n ** 53n - 1n)),
  name: text(1, 200),
  tag: fc.option(text(0, 100), { nil: null }),
}).map((p) => ({ ...p })); // a plain object, as decoding makes

test('a plant line reads back exactly what was written: every storable string, every int64', () => {
  fc.assert(
    fc.property(plantRecord, (p) => {
      const line = plantLine(p);
      assert.ok(line.endsWith('\n') && line.indexOf('\n') === line.length - 1, 'one line');
      assert.deepEqual(decodeLine(line.slice(0, -1), 2), { kind: 'plant', record: p });
    }),
    { numRuns: 500 },
  );
});

test('lines are split on their bytes, whatever the chunks: a character split across two chunks arrives whole', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(plantRecord, { minLength: 1, maxLength: 20 }), fc.integer({ min: 1, max: 64 }), async (plants, size) => {
      const bytes = Buffer.from(plants.map(plantLine).join(''));
      const chunks: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
      const read: PlantRecord[] = [];
      for await (const { text: line, number } of readLines(chunks)) {
        const decoded = decodeLine(line, number);
        if (decoded.kind === 'plant') read.push(decoded.record);
      }
      assert.deepEqual(read, plants);
    }),
    { numRuns: 100 },
  );
});

test('random plants go through a store and out again byte for byte, in order', async (t) => {
  const plants = fc.sample(plantRecord, { numRuns: 300, seed: 13 });
  // (owner, id) is a key: keep the first of each.
  const unique = [...new Map(plants.map((p) => [`${p.owner}\u0000${p.id}`, p])).values()];
  const dir = tempDir(t);
  const file = join(dir, 'random.ndjson');
  const counts = { plants: unique.length, tokens: 0, webhooks: 0, events: 0 };
  writeFileSync(file, headerLine('sqlite', new Date(), counts) + unique.map(plantLine).join(''));
  const target = await testDatabase(t);
  const summary = await importFrom(target.config, file);
  assert.equal(summary.tallies.plant.imported, unique.length);
  const again = join(dir, 'again.ndjson');
  await exportTo(target.config, again);
  assert.equal(records(again), records(file));
});

test('an import line whose user, owner or token name holds a bidirectional control, an invisible format character or a line separator is refused, naming the line, the field and the character', () => {
  const token = (fields: object) => JSON.stringify({
    type: 'token', id: 1, hash: 'a'.repeat(64), user: 'alice', scopes: ['plants:read'], admin: false, name: null,
    createdAt: '2026-01-31T12:00:00.000Z', expiresAt: null, revokedAt: null, ...fields,
  });
  const cases: Array<[string, string, string]> = [
    [token({ user: 'x\u202Ey' }), 'user', 'U+202E'],
    [token({ name: 'lap\u200Btop' }), 'name', 'U+200B'],
    [token({ user: '\u2066alice\u2069' }), 'user', 'U+2066'],
    [JSON.stringify({ type: 'plant', owner: 'bob\u2028', id: 1, name: 'fern' }), 'owner', 'U+2028'],
  ];
  for (const [line, field, char] of cases) {
    assert.throws(() => decodeLine(line, 7), (e: unknown) => {
      assert.equal(
        (e as Error).message,
        `line 7: "${field}" must not contain control characters, invisible format characters (bidirectional controls, zero-width characters), or line and paragraph separators (found ${char})`,
      );
      return true;
    }, field);
  }
});
