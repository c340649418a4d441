import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { testDatabase, type TestDatabase } from './app.js';
import { cli } from './cli.js';
import { spawnServer, type SpawnedServer } from './process.js';

/** Shared by test/process/metrics.test.ts and test/postgres/metrics.test.ts. */

/** One sample of the exposition: `name{labels} value`. */
export interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/**
 * Parses the Prometheus text format (0.0.4) strictly enough to fail on anything malformed: every line is
 * a HELP or TYPE comment, or a sample whose family (its name less _bucket/_sum/_count/_total suffixes
 * where the TYPE says so) was declared before it.
 */
export function parse(text: string): Sample[] {
  assert.ok(text.endsWith('\n'), 'the exposition ends with a newline');
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (comment) {
      if (comment[1] === 'TYPE') {
        assert.match(comment[3] ?? '', /^(counter|gauge|histogram|summary|untyped)$/, line);
        types.set(comment[2] ?? '', comment[3] ?? '');
      }
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const [, name = '', rawLabels = '', value = ''] = m;
    const labels: Record<string, string> = {};
    const label = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;
    for (let at = 0; at < rawLabels.length;) {
      label.lastIndex = at;
      const l = label.exec(rawLabels);
      assert.ok(l, `bad labels in: ${line}`);
      labels[l[1] ?? ''] = (l[2] ?? '').replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      at = label.lastIndex;
    }
    const family = [name, name.replace(/_(bucket|sum|count)$/, ''), name.replace(/_total$/, '')].find((f) => types.has(f));
    assert.ok(family, `sample without a TYPE: ${line}`);
    // Prometheus reads values as Go's ParseFloat does, special values in any case (prom-client writes "Nan").
    const number = /^\+?inf$/i.test(value) ? Infinity : /^-inf$/i.test(value) ? -Infinity : Number(value);
    assert.ok(!Number.isNaN(number) || /^nan$/i.test(value), `bad value: ${line}`);
    samples.push({ name, labels, value: number });
  }
  return samples;
}

/** The value of the one sample named `name` whose labels include `labels`; undefined when there is none. */
export function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  assert.ok(found.length <= 1, `${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
  return found[0]?.value;
}

export const has = (samples: Sample[], name: string) => samples.some((s) => s.name === name);

export interface Running {
  readonly server: SpawnedServer;
  readonly api: string;
  readonly metrics: string;
  readonly db: TestDatabase;
  scrape(): Promise<Sample[]>;
}

/** A real server process with METRICS_PORT=0 (a free port), its metrics URL read from its log line. */
export async function serveWithMetrics(t: TestContext, env: Record<string, string> = {}, db?: TestDatabase): Promise<Running> {
  const database = db ?? (await testDatabase(t));
  const server = spawnServer(t, { DATABASE_URL: database.url, METRICS_PORT: '0', WEBHOOK_ALLOW_PRIVATE: 'on', ...env });
  const api = await server.ready;
  const metrics = /"metrics":"(http:\/\/127\.0\.0\.1:\d+\/metrics)"/.exec(server.logs())?.[1];
  assert.ok(metrics, `no metrics line in the log: ${server.logs()}`);
  t.after(() => server.stop());
  return {
    server, api, metrics, db: database,
    async scrape() {
      // Bounded: a scrape that hangs is the failure this guards against (the server bounds it at 2 s).
      const res = await fetch(metrics, { signal: AbortSignal.timeout(15_000) });
      assert.equal(res.status, 200);
      return parse(await res.text());
    },
  };
}

/** Issues a token as `plantstore token create` does, in this process: the server reads it from the store. */
export async function token(db: TestDatabase, user: string, ...scopes: string[]): Promise<string> {
  const args = ['token', 'create', '--user', user, ...scopes.flatMap((s) => ['--scope', s])];
  const { code, stdout, stderr } = await cli(args, { env: { DATABASE_URL: db.url } });
  assert.equal(code, 0, stderr);
  return stdout.trim();
}

export const json = (secret: string) => ({ authorization: `Bearer ${secret}`, 'content-type': 'application/json' });
