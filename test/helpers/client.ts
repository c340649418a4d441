import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { TestContext } from 'node:test';
// The package as its users import it: packages/client/dist through its "exports" (npm test builds first).
import { PlantStore, PlantStoreError, type PlantStoreOptions } from '@plantstore/client';
import { testApp, type TestAppOptions } from './app.js';

export const MAX = 2n ** 63n - 1n;
export const MIN = -(2n ** 63n);

export interface Event {
  readonly phase: 'request' | 'response';
  readonly method: string;
  readonly url: string;
  readonly status: number;
  readonly at: number;
}

/** A plantstore app listening on loopback, with a log of what reached it and when. */
export async function served(t: TestContext, options: TestAppOptions = {}) {
  const fixture = await testApp(t, options);
  const events: Event[] = [];
  const record = (phase: Event['phase']) => (request: { method: string; url: string }, reply: { statusCode: number }, done: () => void) => {
    events.push({ phase, method: request.method, url: request.url, status: reply.statusCode, at: performance.now() });
    done();
  };
  fixture.app.addHook('onRequest', record('request'));
  fixture.app.addHook('onResponse', record('response'));
  await fixture.app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(fixture.app.server.address() as { port: number }).port}`;
  const client = (token: string, options: Partial<PlantStoreOptions> = {}) => new PlantStore({ baseUrl: url, token, ...options });
  const responses = (method: string) => events.filter((e) => e.phase === 'response' && e.method === method).map((e) => e.status);
  return { ...fixture, url, events, client, responses };
}

export async function all<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/** Asserts that `promise` rejects with a PlantStoreError like `expected`, and returns it. */
export async function apiError(promise: Promise<unknown>, expected: { status: number; error: number; message?: RegExp }): Promise<PlantStoreError> {
  const error = await promise.then(() => assert.fail('expected a PlantStoreError'), (e: unknown) => e);
  assert.ok(error instanceof PlantStoreError, String(error));
  assert.ok(error instanceof Error);
  assert.equal(error.name, 'PlantStoreError');
  assert.equal(error.status, expected.status, error.message);
  assert.equal(error.error, expected.error, error.message);
  if (expected.message) assert.match(error.message, expected.message);
  return error;
}


/** The URL of a loopback port nothing listens on (connections to it are refused). */
export async function nothingListening(): Promise<string> {
  const listener = createServer().listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const { port } = listener.address() as { port: number };
  listener.close();
  await once(listener, 'close');
  return `http://127.0.0.1:${port}`;
}
