import type {
  EndpointTransferRecord, EventTransferRecord, PlantRecord, TokenTransferRecord, TransferCounts,
} from '../store/transfer.js';

/**
 * The export file (docs/backups.md, "The format"): NDJSON, UTF-8, one JSON object per line ending
 * in "\n". Line 1 is the header; then every plant, token, webhook endpoint and pending event, in that
 * order, each kind in creation order, each line with its `type`. Int64 ids are JSON integers written
 * with their exact digits (never through a JS number). A reader refuses a version it does not know.
 */
export const FORMAT = 'plantstore-export';
export const VERSION = 1;

export interface Header {
  readonly format: typeof FORMAT;
  readonly version: number;
  /** The backend exported from: sqlite or postgres. */
  readonly backend: string;
  /** When the snapshot was taken (ISO 8601, UTC). */
  readonly exportedAt: string;
  /** How many lines of each kind follow: a reader knows a file cut short at a line's end by these. */
  readonly counts: TransferCounts;
}

/** The kinds in the order the file holds them; an event needs its endpoint, so endpoints go first. */
export const KINDS = ['plant', 'token', 'webhook', 'event'] as const;
export type Kind = (typeof KINDS)[number];
export const COUNT_OF: Readonly<Record<Kind, keyof TransferCounts>> = { plant: 'plants', token: 'tokens', webhook: 'webhooks', event: 'events' };

export function headerLine(backend: string, exportedAt: Date, counts: TransferCounts): string {
  const header: Header = { format: FORMAT, version: VERSION, backend, exportedAt: exportedAt.toISOString(), counts };
  return `${JSON.stringify(header)}\n`;
}

const str = JSON.stringify;
const time = (date: Date | null) => (date === null ? 'null' : `"${date.toISOString()}"`);

/** `{"type":"plant","owner":…,"id":…,"name":…,"tag":…}`, the tag only when the plant has one. */
export function plantLine(p: PlantRecord): string {
  return `{"type":"plant","owner":${str(p.owner)},"id":${p.id.toString()},"name":${str(p.name)}${p.tag === null ? '' : `,"tag":${str(p.tag)}`}}\n`;
}

export function tokenLine(t: TokenTransferRecord): string {
  return `{"type":"token","id":${t.id},"hash":${str(t.hash)},"user":${str(t.user)},"scopes":${str(t.scopes)},"admin":${t.admin},` +
    `"name":${t.name === null ? 'null' : str(t.name)},"createdAt":${time(t.createdAt)},"expiresAt":${time(t.expiresAt)},` +
    `"revokedAt":${time(t.revokedAt)}}\n`;
}

export function webhookLine(e: EndpointTransferRecord): string {
  return `{"type":"webhook","id":${str(e.id)},"user":${str(e.user)},"allUsers":${e.allUsers},"url":${str(e.url)},` +
    `"description":${e.description === null ? 'null' : str(e.description)},"secret":${str(e.secret)},"createdAt":${time(e.createdAt)},` +
    `"disabledAt":${time(e.disabledAt)},"disabledReason":${e.disabledReason === null ? 'null' : str(e.disabledReason)}}\n`;
}

export function eventLine(e: EventTransferRecord): string {
  return `{"type":"event","eventId":${str(e.eventId)},"endpointId":${str(e.endpointId)},"plantId":${e.plantId.toString()},` +
    `"body":${str(e.body)},"attempts":${e.attempts},"nextAttemptAt":${time(e.nextAttemptAt)},"createdAt":${time(e.createdAt)}}\n`;
}
