import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { buildApp } from '../../src/app.js';
import { LateStore } from '../../src/store/wrappers/late.js';
import { silentLogger } from '../helpers/app.js';
import { ROOT } from '../helpers/checkout.js';

/**
 * /openapi.json, as the server serves it, passes Redocly's recommended rules (redocly.yaml) and Spectral's
 * OpenAPI rules (.spectral.yaml) with no error and no warning. `npm run lint:openapi` runs this file alone.
 */

interface Finding {
  readonly severity: string;
  readonly rule: string;
  readonly where: string;
  readonly message: string;
}

interface Linted {
  readonly findings: readonly Finding[];
  /** What the tool said besides its report (stderr), for the failure message. */
  readonly stderr: string;
}

/** A package's installed binary, as npm links it: its package.json `bin` entry, run with this Node. */
function binOf(pkg: string, name: string): string {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { bin: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin[name];
  assert.ok(bin, `${pkg} has no binary ${name}`);
  return join(ROOT, 'node_modules', pkg, bin);
}

/**
 * Offline: Redocly's usage data and update check are off (its documented variables; redocly.yaml also says
 * `telemetry: off`), and test/helpers/offline-guard.mjs refuses, and reports on stderr, any network connection
 * either tool would open.
 */
const OFFLINE_ENV = {
  ...process.env,
  REDOCLY_TELEMETRY: 'off',
  REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  NO_COLOR: '1',
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${new URL('../helpers/offline-guard.mjs', import.meta.url).href}`.trim(),
};

function run(bin: string, args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd: ROOT, env: OFFLINE_ENV, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

interface RedoclyReport {
  totals: { errors: number; warnings: number };
  problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer?: string }> }>;
}

async function redocly(document: string): Promise<Linted> {
  const { stdout, stderr } = await run(binOf('@redocly/cli', 'redocly'), ['lint', '--config', 'redocly.yaml', '--format', 'json', document]);
  // Its exit code says only "errors or not"; the report counts both.
  const report = JSON.parse(stdout) as RedoclyReport;
  const findings = report.problems.map((p) => ({
    severity: p.severity, rule: p.ruleId, where: p.location[0]?.pointer ?? '', message: p.message,
  }));
  assert.equal(findings.length, report.totals.errors + report.totals.warnings, 'every error and warning is in the list');
  return { findings, stderr };
}

/** Spectral's severities: 0 error, 1 warning, 2 information, 3 hint. */
const SPECTRAL_SEVERITY = ['error', 'warning', 'information', 'hint'];

async function spectral(document: string): Promise<Linted> {
  const { code, stdout, stderr } = await run(binOf('@stoplight/spectral-cli', 'spectral'), [
    'lint', '--ruleset', '.spectral.yaml', '--format', 'json', '--quiet', '--fail-severity', 'warn', document,
  ]);
  const results = JSON.parse(stdout) as Array<{ code: string; severity: number; path: string[]; message: string }>;
  const findings = results.map((r) => ({
    severity: SPECTRAL_SEVERITY[r.severity] ?? String(r.severity), rule: r.code, where: r.path.join('.'), message: r.message,
  }));
  // A crash (a ruleset that does not load) prints no JSON and fails above; a failing exit must come with findings.
  if (code !== 0) assert.ok(findings.length > 0, `spectral exited ${code} without findings: ${stderr}`);
  return { findings, stderr };
}

const show = (tool: string, { findings }: Linted): string =>
  findings.map((f) => `${tool} ${f.severity} ${f.rule} at ${f.where}: ${f.message}`).join('\n');

const errorsAndWarnings = (linted: Linted): Finding[] =>
  linted.findings.filter((f) => ['error', 'warn', 'warning'].includes(f.severity));

/** The document as the server serves it (the server needs no store for it), in a file of its own. */
async function servedDocument(t: TestContext): Promise<{ file: string; document: Record<string, unknown> }> {
  const app = await buildApp({ store: new LateStore(), logger: silentLogger });
  t.after(() => app.close());
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  assert.equal(res.statusCode, 200);
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-openapi-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'openapi.json');
  writeFileSync(file, res.body);
  return { file, document: res.json() };
}

function assertOffline(tool: string, { stderr }: Linted): void {
  assert.doesNotMatch(stderr, /NETWORK ACCESS/, `${tool} tried to reach the network:\n${stderr}`);
}

test('/openapi.json passes Redocly (recommended) and Spectral (spectral:oas) with 0 errors and 0 warnings, offline', async (t) => {
  const { file } = await servedDocument(t);
  const [fromRedocly, fromSpectral] = await Promise.all([redocly(file), spectral(file)]);
  for (const [tool, linted] of [['redocly', fromRedocly], ['spectral', fromSpectral]] as const) {
    assertOffline(tool, linted);
    const found = errorsAndWarnings(linted);
    if (linted.findings.length > found.length) t.diagnostic(show(tool, linted));
    t.diagnostic(`${tool}: ${found.filter((f) => f.severity === 'error').length} errors, ${found.filter((f) => f.severity !== 'error').length} warnings`);
    assert.deepEqual(found, [], `${tool} found:\n${show(tool, { findings: found, stderr: '' })}`);
  }
});

test('the linters do find what the rules ask for (so the test above can fail)', async (t) => {
  const { file, document } = await servedDocument(t);
  const broken = structuredClone(document) as { servers?: unknown; paths: Record<string, Record<string, { operationId?: string }>> };
  delete broken.servers;
  delete broken.paths['/plants']?.get?.operationId;
  writeFileSync(file, JSON.stringify(broken));
  const [fromRedocly, fromSpectral] = await Promise.all([redocly(file), spectral(file)]);
  assertOffline('redocly', fromRedocly);
  assertOffline('spectral', fromSpectral);
  const rules = (linted: Linted) => errorsAndWarnings(linted).map((f) => `${f.rule} ${f.where}`).sort();
  assert.deepEqual(rules(fromRedocly), ['no-empty-servers #/openapi', 'operation-operationId #/paths/~1plants/get/operationId']);
  assert.deepEqual(rules(fromSpectral), ['oas3-api-servers ', 'operation-operationId paths./plants.get']);
});
