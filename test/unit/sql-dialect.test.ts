import assert from 'node:assert/strict';
import { test } from 'node:test';
import { join, param, POSTGRES, raw, render, sql, SQLITE, valueless } from '../../src/store/sql/dialect.js';

const ID = param('id');
const USER = param('user', 'text');
const statement = sql`SELECT 1 FROM t WHERE id = ${ID} AND (${USER} IS NULL OR username = ${USER}) AND at <= ${POSTGRES.now}`;

test('a statement renders with numbered placeholders and their casts on PostgreSQL, a name used twice keeping its number', () => {
  const rendered = render(POSTGRES, statement);
  assert.equal(rendered.text, 'SELECT 1 FROM t WHERE id = $1 AND ($2::text IS NULL OR username = $2::text) AND at <= now()');
  assert.deepEqual(rendered.names, ['id', 'user']);
  assert.deepEqual(rendered.values({ user: 'alice', id: 'ep_1' }), ['ep_1', 'alice']);
});

test('a statement renders with one ? per use on SQLite, without casts, its values repeated in order', () => {
  const rendered = render(SQLITE, sql`UPDATE t SET at = ${SQLITE.now} WHERE id = ${ID} AND (${USER} IS NULL OR username = ${USER})`);
  assert.equal(rendered.text, 'UPDATE t SET at = ? WHERE id = ? AND (? IS NULL OR username = ?)');
  assert.deepEqual(rendered.values({ id: 'ep_1', user: null, now: 5 }), [5, 'ep_1', null, null]);
});

test('pieces of SQL go in as they are, joined with a separator when asked; only values become placeholders', () => {
  const list = join([param('a'), param('b'), raw('now()')], ', ');
  assert.equal(render(POSTGRES, sql`VALUES (${list})`).text, 'VALUES ($1, $2, now())');
  assert.equal(render(SQLITE, sql`VALUES (${list})`).text, 'VALUES (?, ?, now())');
});

test('rendering a value the caller did not give is an error, not a NULL bound in its place', () => {
  assert.throws(() => render(POSTGRES, statement).values({ id: 'ep_1' }), /no value for user/);
});

test('a piece written into a statement of a backend\'s own must take no value', () => {
  assert.equal(valueless(POSTGRES, sql`x > ${POSTGRES.now}`), 'x > now()');
  assert.throws(() => valueless(SQLITE, sql`x > ${SQLITE.now}`), /takes values \(now\)/);
});
