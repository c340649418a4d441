import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { pino } from 'pino';
import { describeStore } from '../config/database.js';
import { ConfigError } from '../config/error.js';
import { loadSettings, sourceName, type Config, type SettingSource, type Settings } from '../config/load.js';
import { OPTIONS, shownValue, type OptionInfo } from '../config/options.js';
import { oneLine, shownUrl, urlHoldsSecret } from '../domain/shown.js';
import { ProviderKeys } from '../http/auth/jwks.js';
import { inspectStore, type StoreInspection } from '../store/inspect.js';
import { sqliteDriver } from '../store/sqlite/driver.js';
import { parse } from './args.js';
import { DATABASE_OPTION } from './store.js';
import type { Cli } from './io.js';

export const DOCTOR_HELP = `Usage: plantstore doctor [--json] [--database-url URL] [--config FILE]

Says what a server started here would use, and whether it works, without changing anything: it applies
no migration and creates no store (a missing SQLite file is a finding, not created). One line per
finding, each "ok", "note" or "attention":

  - the settings file, and every setting that differs from its default, with where it came from
    (flag, environment, or file:line); a URL's password and password-like parameters are shown as ***
  - the store: which one, whether it opens; on PostgreSQL whether it accepts connections, and its version
  - the schema version and the migrations pending (serve or "plantstore migrate" applies them)
  - the identity provider (JWT_ISSUER, JWT_JWKS_URL), when one is set: whether it answers with usable keys
  - webhooks: events waiting and failed, endpoints disabled by their receiver

  --json              One JSON object on stdout instead (its shape: docs/production.md, "plantstore doctor")
  --database-url URL  The store to check; default: DATABASE_URL, the settings file, else sqlite:./data/plantstore.db

Exit code: 0 when all is well, 1 when a finding needs attention, 2 for a mistake in the command.`;

/** How long PostgreSQL and the identity provider may take to answer before they count as unreachable. */
const ANSWER_MS = 5000;
/** A pending webhook event older than this means deliveries are not keeping up (or a receiver keeps failing). */
const STALE_BACKLOG_MS = 3_600_000;

type Status = 'ok' | 'note' | 'attention';

interface Finding {
  readonly check: string;
  readonly status: Status;
  readonly message: string;
}

interface ProviderCheck {
  readonly issuer: string | null;
  readonly jwksUrl: string | null;
  readonly reachable: boolean;
  readonly usableKeys: number;
}

/** The identity provider's keys, fetched as the server fetches them (discovery, screening), once. */
async function checkProvider(config: Config, findings: Finding[]): Promise<ProviderCheck> {
  const warnings: Array<{ msg: string; err?: string; kid?: string; reason?: string }> = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
  const keys = new ProviderKeys({ issuer: config.jwtIssuer, jwksUrl: config.jwtJwksUrl, algorithms: config.jwtAlgorithms, log, cooldownMs: 0 });
  const where = shownUrl(config.jwtJwksUrl ?? config.jwtIssuer ?? '');
  try {
    const reachable = await keys.refetchForUnknownKey(Date.now());
    const usable = keys.keys?.usable ?? 0;
    if (!reachable) {
      const why = warnings.find((w) => w.err !== undefined)?.err ?? 'no answer';
      findings.push({ check: 'identity provider', status: 'attention', message: `${where} does not answer with keys: ${why}` });
    } else if (usable === 0) {
      findings.push({ check: 'identity provider', status: 'attention', message: `${where} publishes no key this server can use (JWT_ALGORITHMS ${config.jwtAlgorithms.join(',')})` });
    } else {
      findings.push({ check: 'identity provider', status: 'ok', message: `${where} answers with ${usable} usable ${usable === 1 ? 'key' : 'keys'}` });
    }
    for (const w of warnings.filter((w) => w.reason !== undefined)) {
      findings.push({ check: 'identity provider', status: 'note', message: `key ${w.kid ?? '(no kid)'} is skipped: ${w.reason}` });
    }
    const shown = (url: string | null) => (url === null ? null : shownUrl(url));
    return { issuer: shown(config.jwtIssuer), jwksUrl: shown(config.jwtJwksUrl), reachable, usableKeys: usable };
  } finally {
    keys.close();
  }
}

/** The settings file and the settings that differ from their defaults. */
function settingFindings(settings: Settings, findings: Finding[]): void {
  if (settings.file !== null) {
    findings.push({ check: 'settings', status: 'ok', message: `read ${settings.file}` });
    // A URL setting from the file holding what shownUrl masks: a password, in the URL's user part or in
    // a parameter (password=, sslpassword=, an API key).
    const secrets = OPTIONS.filter((o: OptionInfo) => {
      const value = settings.given[o.env];
      return o.show !== undefined && settings.sources[o.env]?.kind === 'file' && value !== undefined && urlHoldsSecret(value);
    }).map((o: OptionInfo) => o.env);
    if (secrets.length > 0 && (statSync(resolve(settings.cwd, settings.file)).mode & 0o004) !== 0) {
      findings.push({
        check: 'settings', status: 'attention',
        message: `${settings.file} holds a password (in ${secrets.join(', ')}) and every user of this machine can read it (chmod 600, or 640 for the server's group)`,
      });
    }
  }
  for (const { o, value, source } of changedSettings(settings)) {
    findings.push({ check: 'setting', status: 'note', message: `${o.env}=${shownValue(o, value, settings.cwd)} (from ${sourceName(source)})` });
  }
}

/** The settings given a value other than their default, in the table's order. */
function changedSettings(settings: Settings): Array<{ o: OptionInfo; value: string; source: SettingSource }> {
  return OPTIONS.flatMap((o: OptionInfo) => {
    const source = settings.sources[o.env];
    const value = settings.given[o.env];
    if (source === undefined || source.kind === 'default' || value === undefined || value === o.default) return [];
    return [{ o, value, source }];
  });
}

function storeFindings(location: string, store: StoreInspection, findings: Finding[]): void {
  const add = (status: Status, message: string) => findings.push({ check: 'store', status, message });
  if (!store.exists) {
    add('attention', store.backend === 'sqlite'
      ? `no store at ${location}: serve or "plantstore migrate" would create a new, empty one (is DATABASE_URL the server's?)`
      : `${location} holds no plantstore store yet: serve or "plantstore migrate" creates its tables`);
    return;
  }
  add('ok', store.backend === 'sqlite' ? `${location} opens` : `${location} accepts connections (PostgreSQL ${store.serverVersion})`);
  const schema = (status: Status, message: string) => findings.push({ check: 'schema', status, message });
  const version = store.schemaVersion === null ? 'no migration applied' : `version ${store.schemaVersion}`;
  if (store.unknownMigrations.length > 0) {
    schema('attention', `${version}: migrations ${store.unknownMigrations.join(', ')} are unknown to this plantstore; a newer plantstore migrated the store, run that one`);
  } else if (store.pendingMigrations.length > 0) {
    schema('attention', `${version}; pending: ${store.pendingMigrations.join(', ')} (serve applies them at start, or run "plantstore migrate")`);
  } else {
    schema('ok', `${version}, no pending migrations`);
  }
  const hooks = store.webhooks;
  if (hooks === null) return;
  const webhook = (status: Status, message: string) => findings.push({ check: 'webhooks', status, message });
  if (hooks.pending === 0) webhook('ok', 'no events waiting for delivery');
  else {
    const age = Date.now() - (hooks.oldestPending?.getTime() ?? Date.now());
    const oldest = hooks.oldestPending === null ? '' : `, the oldest queued at ${hooks.oldestPending.toISOString()}`;
    webhook(age > STALE_BACKLOG_MS ? 'attention' : 'ok', `${hooks.pending} ${hooks.pending === 1 ? 'event' : 'events'} waiting for delivery${oldest}`);
  }
  if (hooks.failed > 0) {
    webhook('attention', `${hooks.failed} ${hooks.failed === 1 ? 'event' : 'events'} failed after the last retry (kept for WEBHOOK_RETENTION); "plantstore webhook deliveries ID" shows why`);
  }
  for (const e of hooks.disabledEndpoints) {
    webhook('attention', `endpoint ${e.id} is disabled since ${e.disabledAt.toISOString()}${e.reason === null ? '' : `: ${e.reason}`}`);
  }
}

export async function doctorCommand(args: string[], cli: Cli): Promise<number> {
  const { values } = parse(args, { ...DATABASE_OPTION, json: { type: 'boolean' } });
  if (values.help) {
    cli.print(DOCTOR_HELP);
    return 0;
  }
  const findings: Finding[] = [];
  const report: Record<string, unknown> = { settingsFile: null, settings: [], store: null, webhooks: null, identityProvider: null };
  let settings: Settings | undefined;
  try {
    settings = loadSettings({ 'database-url': values['database-url'] }, cli.env, cli.cwd);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    findings.push({ check: 'settings', status: 'attention', message: `refused: ${error.message}` });
  }
  if (settings !== undefined) {
    const { config } = settings;
    settingFindings(settings, findings);
    report.settingsFile = settings.file;
    report.settings = changedSettings(settings).map(({ o, value, source }) => ({
      name: o.env, value: shownValue(o, value, settings.cwd), source: source.kind, ...(source.kind === 'file' ? { file: source.file, line: source.line } : {}),
    }));
    const location = describeStore(config.database, 'url');
    if (config.database.kind === 'sqlite' && sqliteDriver.warning) findings.push({ check: 'store', status: 'attention', message: sqliteDriver.warning });
    try {
      const store = await inspectStore(config.database, { connectTimeoutMs: ANSWER_MS });
      storeFindings(location, store, findings);
      const { webhooks, ...rest } = store;
      report.store = { location, ...rest };
      report.webhooks = webhooks;
    } catch (error) {
      findings.push({ check: 'store', status: 'attention', message: (error as Error).message });
    }
    if (config.jwtIssuer !== null || config.jwtJwksUrl !== null) report.identityProvider = await checkProvider(config, findings);
    else findings.push({ check: 'identity provider', status: 'note', message: 'none set (JWT_ISSUER, JWT_JWKS_URL): only opaque tokens are accepted' });
  }
  const attention = findings.filter((f) => f.status === 'attention').length;
  if (values.json) {
    cli.print(JSON.stringify({ ok: attention === 0, findings, ...report }, null, 2));
  } else {
    // One line per finding: a value, a file name or a receiver's reason holding a line break is escaped.
    for (const f of findings) cli.print(`${f.status.padEnd(9)} ${f.check}: ${oneLine(f.message)}`);
    cli.print(attention === 0 ? 'All is well.' : `${attention} ${attention === 1 ? 'finding needs' : 'findings need'} attention.`);
  }
  return attention === 0 ? 0 : 1;
}
