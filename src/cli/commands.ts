import type { Cli } from './io.js';

// The command table: every command's name and summary, and where its code is. A command's module is
// loaded when the command runs, so that a command line loads only what its own command needs:
// `plantstore --version` or `token create` loads neither the HTTP server nor the other backend's driver.

/** A command as the main help lists it. */
export interface CommandSummary {
  /** As typed: "serve", "token revoke". */
  readonly name: string;
  /** What follows the name in the list ("ID", "[--out FILE]"), if anything. */
  readonly args?: string;
  readonly summary: string;
}

/**
 * Runs the command with the arguments after its name; a refusal is thrown (see main). A command that
 * has said what it found (doctor) may return its exit code. It reads and writes only through `cli`.
 */
export type Run = (args: string[], cli: Cli) => Promise<void | number>;

export interface Command extends CommandSummary {
  readonly run: Run;
}

/** The command `pick` finds in the module `load` imports, loaded when it first runs. */
const later = <M>(load: () => Promise<M>, pick: (module: M) => Run): Run => async (args, cli) => pick(await load())(args, cli);

const data = () => import('./data.js');
const token = () => import('./token.js');
const webhook = () => import('./webhook.js');

/** Every command, in the order the main help lists them. */
export const COMMANDS: readonly Command[] = [
  { name: 'serve', summary: 'Run the HTTP service (migrations run at start)', run: later(() => import('./serve.js'), (m) => m.serveCommand) },
  {
    name: 'doctor', summary: 'Check the store, settings, PostgreSQL, identity provider and webhooks; writes nothing',
    run: later(() => import('./doctor.js'), (m) => m.doctorCommand),
  },
  { name: 'migrate', summary: 'Apply pending database migrations and exit', run: later(data, (m) => m.migrateCommand) },
  { name: 'token create', summary: 'Create a bearer token (printed once, on the last line of stdout)', run: later(token, (m) => m.tokenCreate) },
  { name: 'token list', summary: 'List tokens (never their secrets)', run: later(token, (m) => m.tokenList) },
  { name: 'token revoke', args: 'ID', summary: 'Revoke a token', run: later(token, (m) => m.tokenRevoke) },
  {
    name: 'webhook add', summary: 'Register a webhook endpoint (its secret printed once, on the last line of stdout)',
    run: later(webhook, (m) => m.webhookAdd),
  },
  { name: 'webhook list', summary: 'List webhook endpoints (never their secrets)', run: later(webhook, (m) => m.webhookList) },
  { name: 'webhook remove', args: 'ID', summary: 'Remove a webhook endpoint', run: later(webhook, (m) => m.webhookRemove) },
  { name: 'webhook deliveries', args: 'ID', summary: 'Show an endpoint\'s latest delivery attempts', run: later(webhook, (m) => m.webhookDeliveries) },
  {
    name: 'webhook update', args: 'ID', summary: 'Change an endpoint\'s URL or description, enable or disable it',
    run: later(webhook, (m) => m.webhookUpdate),
  },
  { name: 'webhook resend', args: 'ID EVENT_ID', summary: 'Send one event again, with the same webhook-id', run: later(webhook, (m) => m.webhookResend) },
  { name: 'webhook recover', args: 'ID --since TIME', summary: 'Send every failed event since TIME again', run: later(webhook, (m) => m.webhookRecover) },
  {
    name: 'webhook rotate-secret', args: 'ID', summary: 'Give an endpoint a new secret (printed once, on the last line of stdout)',
    run: later(webhook, (m) => m.webhookRotateSecret),
  },
  { name: 'webhook test', args: 'ID', summary: 'Send a test event to one endpoint', run: later(webhook, (m) => m.webhookTest) },
  {
    name: 'export', args: '[--out FILE]', summary: 'Write the whole store as NDJSON (a backup, or a move to another store)',
    run: later(data, (m) => m.exportCommand),
  },
  { name: 'import', args: 'FILE', summary: 'Load an export into the store (SQLite or PostgreSQL)', run: later(data, (m) => m.importCommand) },
  {
    name: 'backup', args: '--out FILE',
    summary: 'Copy a SQLite store to FILE, consistently, while the server runs (PostgreSQL: pg_dump)', run: later(data, (m) => m.backupCommand),
  },
];

/**
 * Commands with subcommands ("token create"): the help shown for the group alone, or with --help. Each
 * is a text in its group's file, beside the options it describes.
 */
export const GROUPS: Readonly<Record<string, () => Promise<string>>> = {
  token: async () => (await token()).TOKEN_HELP,
  webhook: async () => (await webhook()).WEBHOOK_HELP,
};

/** Where the main help's second column starts, after two spaces of indent. */
const MAIN_COLUMN = 22;

const mainLine = (left: string, right: string) => `  ${left.padEnd(MAIN_COLUMN - 1)} ${right}`;

/** `plantstore --help`: the commands, in the table's order, and the options of plantstore itself. */
export function mainHelp(commands: readonly CommandSummary[] = COMMANDS): string {
  return `Usage: plantstore <command> [options]

Commands:
${commands.map((c) => mainLine(c.args === undefined ? c.name : `${c.name} ${c.args}`, c.summary)).join('\n')}

Options:
${mainLine('-h, --help', 'Show this help; "plantstore <command> --help" shows a command\'s options')}
${mainLine('-v, --version', 'Print plantstore\'s version')}
${mainLine('--config FILE', 'Read settings from FILE, KEY=value lines (also PLANTSTORE_CONFIG=FILE); any command')}

Every command that uses the store says on stderr which one ("using sqlite:/…/plantstore.db"): the CLI and
the server share a store only when they name the same one (DATABASE_URL, default sqlite:./data/plantstore.db,
relative to the working directory).`;
}
