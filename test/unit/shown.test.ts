import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../src/config/error.js';
import { loadSettings } from '../../src/config/load.js';
import { OPTIONS, shownValue, type OptionInfo } from '../../src/config/options.js';
import { serveHelp } from '../../src/cli/help.js';
import { describeStore } from '../../src/domain/database-url.js';
import { oneLine, shownUrl, urlHoldsSecret } from '../../src/domain/shown.js';

const option = (env: string) => OPTIONS.find((o) => o.env === env) as OptionInfo;

test('a URL is shown with the password of its user part and of password-like parameters masked, and nothing else changed', () => {
  const cases: Array<[string, string]> = [
    ['postgres://app:hunter2@db:5432/plants', 'postgres://app:***@db:5432/plants'],
    ['postgres://app@db/plants?password=hunter2', 'postgres://app@db/plants?password=***'],
    ['postgres://app@db/plants?sslmode=verify-full&sslkey=/k.pem&sslpassword=hunter2', 'postgres://app@db/plants?sslmode=verify-full&sslkey=/k.pem&sslpassword=***'],
    ['https://idp.example/jwks?api_key=hunter2', 'https://idp.example/jwks?api_key=***'],
    ['https://idp.example/jwks?access_token=hunter2&client_secret=hunter2', 'https://idp.example/jwks?access_token=***&client_secret=***'],
    ['https://idp.example/jwks?sig=hunter2', 'https://idp.example/jwks?sig=***'],
  ];
  for (const [given, shown] of cases) {
    assert.equal(shownUrl(given), shown, given);
    assert.equal(urlHoldsSecret(given), true, given);
  }
  // Nothing to mask: the text as given, not as URL would spell it (an issuer must match `iss` exactly).
  for (const plain of ['https://idp.example', 'postgres://app@db/plants?sslmode=require&sslkey=/k.pem&passfile=/p', 'https://idp.example/jwks?password=']) {
    assert.equal(shownUrl(plain), plain);
    assert.equal(urlHoldsSecret(plain), false, plain);
  }
  assert.equal(shownUrl('postgres://app:hunter2@[db/plants'), 'postgres:… (not shown: not a URL, and it may hold a password)');
  assert.equal(describeStore({ kind: 'postgres', url: 'postgres://app@db/plants?sslpassword=hunter2' }, 'url'), 'postgres://app@db/plants?sslpassword=***');
  assert.equal(shownValue(option('JWT_JWKS_URL'), 'https://idp.example/jwks?token=hunter2', process.cwd()), 'https://idp.example/jwks?token=***');
});

test('a value is shown on one line: control characters escaped, backslashes as typed', () => {
  assert.equal(oneLine('api\nok        fake\r\t\u0000\u202e\u2028'), 'api\\nok        fake\\r\\t\\u0000\\u202e\\u2028');
  assert.equal(oneLine('C:\\plants'), 'C:\\plants');
  assert.equal(shownValue(option('JWT_AUDIENCE'), 'api\nok  fake', process.cwd()), 'api\\nok  fake');
  assert.equal(new ConfigError('PORT must be a whole number, got "80\nok  fake"').message, 'PORT must be a whole number, got "80\\nok  fake"');
  assert.throws(() => loadSettings({}, { PORT: '80\nok  fake' }, process.cwd()), { message: 'PORT must be a whole number from 0 to 65535, got "80\\nok  fake"' });
});

test('JWT_JWKS_URL and JWT_ISSUER with a user name or password are refused at load, the password never repeated', () => {
  for (const env of ['JWT_JWKS_URL', 'JWT_ISSUER']) {
    assert.throws(
      () => loadSettings({}, { [env]: 'https://app:hunter2@idp.example/jwks', JWT_AUDIENCE: 'api' }, process.cwd()),
      (e: unknown) => e instanceof ConfigError && e.message.startsWith(`${env} must not hold a user name or password (user:password@)`) && !e.message.includes('hunter2'),
    );
  }
  assert.throws(() => loadSettings({}, { JWT_JWKS_URL: 'https://app@idp.example/jwks', JWT_AUDIENCE: 'api' }, process.cwd()), /JWT_JWKS_URL must not hold a user name or password/);
  // Refused for another reason, the value is repeated masked.
  assert.throws(() => loadSettings({}, { JWT_JWKS_URL: 'http://idp.example/jwks?api_key=hunter2', JWT_AUDIENCE: 'api' }, process.cwd()), {
    message: 'JWT_JWKS_URL must be an https:// URL (http:// only on a loopback address), got "http://idp.example/jwks?api_key=***"',
  });
});

test('serve --help shows a URL setting masked and every value on one line', () => {
  const settings = loadSettings({}, { JWT_JWKS_URL: 'https://idp.example/jwks?api_key=hunter2', JWT_AUDIENCE: 'api\nok  fake' }, process.cwd());
  const help = serveHelp(settings, 200);
  assert.ok(!help.includes('hunter2'));
  assert.match(help, /now: https:\/\/idp\.example\/jwks\?api_key=\*\*\* \(from environment\)$/m);
  assert.match(help, /now: api\\nok {2}fake \(from environment\)$/m);
  assert.doesNotMatch(help, /^ok {2}fake/m);
});

test('an empty on/off setting is refused naming the setting, however it is given', () => {
  for (const o of OPTIONS.filter((candidate) => candidate.default === 'on' || candidate.default === 'off').filter((c) => c.env !== 'TRUST_PROXY' && c.env !== 'RATE_LIMIT')) {
    assert.throws(() => loadSettings({}, { [o.env]: '' }, process.cwd()), { message: `${o.env} must be on or off, got ""` });
    assert.throws(() => loadSettings({ [o.flag]: '' }, {}, process.cwd()), { message: `--${o.flag} must be on or off, got ""` });
  }
});
