import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { ConfigError } from '../../src/config/error.js';
import { parseSettings, SETTINGS_FILE_MAX_BYTES } from '../../src/config/file.js';
import { loadLogConfig, loadSettings, sourceName } from '../../src/config/load.js';
import { OPTIONS } from '../../src/config/options.js';

const KNOWN = OPTIONS.map((o) => o.env);

function settingsFile(t: TestContext, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-config-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'plantstore.env');
  writeFileSync(path, text);
  return path;
}

test('a settings file is read as .env files are written: comments, blank lines, export, quotes', () => {
  const file = parseSettings(
    [
      '\uFEFF# plantstore',
      '',
      'PORT=9000',
      '  HOST = 0.0.0.0   # every interface',
      'export LOG_LEVEL=warn',
      'CORS_ORIGINS="https://a.example,https://b.example" # two',
      "JWT_AUDIENCE='api # not a comment'",
      'TRUST_PROXY=',
      'JWT_USER_CLAIM=a#b',
    ].join('\r\n'),
    'p.env',
    KNOWN,
  );
  assert.deepEqual(Object.fromEntries([...file.settings].map(([k, v]) => [k, [v.value, v.line]])), {
    PORT: ['9000', 3],
    HOST: ['0.0.0.0', 4],
    LOG_LEVEL: ['warn', 5],
    CORS_ORIGINS: ['https://a.example,https://b.example', 6],
    JWT_AUDIENCE: ['api # not a comment', 7],
    TRUST_PROXY: ['', 8],
    JWT_USER_CLAIM: ['a#b', 9],
  });
});

test('a settings file line that is not a setting is refused with the file and line, never its value', () => {
  const cases: Array<[string, RegExp]> = [
    ['PORT=1\nDATABSE_URL=sqlite:x.db', /^p\.env:2: unknown setting DATABSE_URL \(did you mean DATABASE_URL\?\); the settings are listed by "plantstore serve --help"$/],
    ['NODE_ENV=production', /^p\.env:1: unknown setting NODE_ENV; the settings/],
    ['PLANTSTORE_CONFIG=other.env', /^p\.env:1: unknown setting PLANTSTORE_CONFIG/],
    ['\n\npostgres://u:hunter2@db/p', /^p\.env:3: expected KEY=value \(a setting's name, =, its value\), or a # comment$/],
    ['PORT=1\n#\nPORT=2', /^p\.env:3: PORT is set already, on line 1$/],
    ['DATABASE_URL="postgres://u:hunter2@db/p', /^p\.env:1: the value's closing " is missing \(a quoted value must end on its line\)$/],
    ["HOST='a' b", /^p\.env:1: only a # comment may follow the value's closing '$/],
  ];
  for (const [text, message] of cases) {
    assert.throws(() => parseSettings(text, 'p.env', KNOWN), (e: unknown) => e instanceof ConfigError && message.test(e.message) && !e.message.includes('hunter2'), text);
  }
});

test('precedence: a flag wins over the environment, which wins over the file, which wins over the default; each source is kept', (t) => {
  const path = settingsFile(t, 'PORT=9001\nHOST=0.0.0.0\nLOG_LEVEL=warn\n');
  const settings = loadSettings({ port: '9003' }, { PLANTSTORE_CONFIG: path, PORT: '9002', HOST: '::1' }, process.cwd());
  assert.equal(settings.config.port, 9003);
  assert.equal(settings.config.host, '::1');
  assert.equal(settings.config.logLevel, 'warn');
  assert.equal(settings.config.docs, true);
  assert.equal(settings.file, path);
  assert.deepEqual(settings.sources.PORT, { kind: 'flag' });
  assert.deepEqual(settings.sources.HOST, { kind: 'env' });
  assert.deepEqual(settings.sources.LOG_LEVEL, { kind: 'file', file: path, line: 3 });
  assert.deepEqual(settings.sources.DOCS, { kind: 'default' });
  assert.equal(sourceName(settings.sources.LOG_LEVEL!), `${path}:3`);
  assert.deepEqual(settings.given, { PORT: '9003', HOST: '::1', LOG_LEVEL: 'warn' });
  assert.equal(loadSettings({}, { PLANTSTORE_CONFIG: '' }, process.cwd()).file, null, 'an empty PLANTSTORE_CONFIG names no file');
});

test('a bad value in the settings file is refused with its file and line; one overridden is not read', (t) => {
  const path = settingsFile(t, '# ports\nPORT=http\nDATABASE_URL=postgres://u:hunter2@db:99999/p\n');
  assert.throws(() => loadSettings({}, { PLANTSTORE_CONFIG: path }, process.cwd()), { message: `${path}:2: PORT must be a whole number from 0 to 65535, got "http"` });
  assert.throws(
    () => loadSettings({}, { PLANTSTORE_CONFIG: path, PORT: '1' }, process.cwd()),
    (e: unknown) => e instanceof ConfigError && e.message === `${path}:3: DATABASE_URL: the port must be a whole number from 1 to 65535`,
  );
  assert.equal(loadSettings({ port: '2' }, { PLANTSTORE_CONFIG: path, DATABASE_URL: 'sqlite:x.db' }, process.cwd()).config.port, 2);
  assert.throws(
    () => loadSettings({}, { PLANTSTORE_CONFIG: join(path, '..', 'missing.env') }, process.cwd()),
    (e: unknown) => e instanceof ConfigError && /^cannot read the settings file .*missing\.env: no such file$/.test(e.message),
  );
});

test('a refusal about two settings names those the settings file gave, with their lines', (t) => {
  const path = settingsFile(t, 'PORT=9000\nMETRICS_PORT=9000\n# a provider\nJWT_ISSUER=https://idp.example/realms/x\n');
  const audience = 'JWT_AUDIENCE is required when JWT_ISSUER or JWT_JWKS_URL is set';
  assert.throws(() => loadSettings({}, { PLANTSTORE_CONFIG: path }, process.cwd()), (e: unknown) => e instanceof ConfigError && e.message.startsWith(audience) && e.message.endsWith(` (JWT_ISSUER at ${path}:4)`));
  const metrics = 'METRICS_PORT must differ from PORT (9000): metrics have a listener of their own';
  assert.throws(() => loadSettings({}, { PLANTSTORE_CONFIG: path, JWT_AUDIENCE: 'api' }, process.cwd()), { message: `${metrics} (METRICS_PORT at ${path}:2, PORT at ${path}:1)` });
  // Given otherwise, a setting is named as it was given, with no line.
  assert.throws(() => loadSettings({}, { PLANTSTORE_CONFIG: path, JWT_AUDIENCE: 'api', PORT: '9000' }, process.cwd()), { message: `${metrics} (METRICS_PORT at ${path}:2)` });
  assert.throws(() => loadSettings({ port: '9000' }, { PLANTSTORE_CONFIG: path, JWT_AUDIENCE: 'api' }, process.cwd()), {
    message: `METRICS_PORT must differ from --port (9000): metrics have a listener of their own (METRICS_PORT at ${path}:2)`,
  });
});

test('serve logs a refused configuration with the LOG_FORMAT of the settings file', (t) => {
  const path = settingsFile(t, 'LOG_FORMAT=pretty\nPORT=http\n');
  assert.equal(loadLogConfig({}, { PLANTSTORE_CONFIG: path }, process.cwd()).logFormat, 'pretty');
  assert.equal(loadLogConfig({}, { PLANTSTORE_CONFIG: path, LOG_FORMAT: 'json' }, process.cwd()).logFormat, 'json');
});

test('a settings file larger than the bound is refused unread; one of exactly the bound is read', (t) => {
  const line = 'PORT=9000\n';
  const fill = (bytes: number) => `${line}#${'x'.repeat(bytes - line.length - 2)}\n`;
  const exact = settingsFile(t, fill(SETTINGS_FILE_MAX_BYTES));
  assert.equal(loadSettings({}, { PLANTSTORE_CONFIG: exact }, process.cwd()).config.port, 9000);
  const over = settingsFile(t, fill(SETTINGS_FILE_MAX_BYTES + 1));
  assert.throws(() => loadSettings({}, { PLANTSTORE_CONFIG: over }, process.cwd()), {
    message: `cannot read the settings file ${over}: it is larger than 64 KiB, too large for a settings file`,
  });
});
