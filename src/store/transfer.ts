import type { Scope } from '../domain/principal.js';
import type { Store } from './store.js';

/**
 * Whole-store reading and writing for `plantstore export` and `import` (src/transfer/): what the Store
 * interface does not offer, since no request needs it — every row in creation order from one snapshot,
 * and rows inserted with the ids, hashes and times they had in another store.
 */

/** A plant with its owner; `tag` null when it has none. */
export interface PlantRecord {
  readonly owner: string;
  readonly id: bigint;
  readonly name: string;
  readonly tag: string | null;
}

/** A token as stored: its SHA-256 hash, never a secret (there is none to export). */
export interface TokenTransferRecord {
  readonly id: number;
  readonly hash: string;
  readonly user: string;
  readonly scopes: readonly Scope[];
  readonly admin: boolean;
  readonly name: string | null;
  readonly createdAt: Date;
  readonly expiresAt: Date | null;
  readonly revokedAt: Date | null;
}

/** A webhook endpoint with its signing secret (signing needs it, so it moves with the endpoint). */
export interface EndpointTransferRecord {
  readonly id: string;
  readonly user: string;
  readonly allUsers: boolean;
  readonly url: string;
  readonly description: string | null;
  readonly secret: string;
  readonly createdAt: Date;
  readonly disabledAt: Date | null;
  readonly disabledReason: string | null;
}

/** An event not yet delivered nor given up; its attempts so far, and when the next one is due. */
export interface EventTransferRecord {
  readonly eventId: string;
  readonly endpointId: string;
  readonly plantId: bigint;
  readonly body: string;
  readonly attempts: number;
  readonly nextAttemptAt: Date;
  readonly createdAt: Date;
}

export interface TransferCounts {
  readonly plants: number;
  readonly tokens: number;
  readonly webhooks: number;
  readonly events: number;
}

/** One consistent view of the whole store: the counts and every row are of the same moment. */
export interface Snapshot {
  readonly counts: TransferCounts;
  /** When the snapshot was taken, by the store's clock (a claimed event is due again from then). */
  readonly takenAt: Date;
  /** Each in creation order, in batches, so that memory stays bounded whatever the store's size. */
  plants(): AsyncIterable<readonly PlantRecord[]>;
  tokens(): AsyncIterable<readonly TokenTransferRecord[]>;
  webhooks(): AsyncIterable<readonly EndpointTransferRecord[]>;
  events(): AsyncIterable<readonly EventTransferRecord[]>;
}

/** A record whose key the store already holds with other content. */
export interface Conflict {
  /** Which record: `owner "alice", id 7`, `token hash 3fa2…`, `endpoint ep_…`, `event msg_… for ep_…`. */
  readonly record: string;
  /** The fields that differ. */
  readonly fields: readonly string[];
}

/**
 * What one batch did. With conflicts and no `skipConflicts`, nothing of the batch was written (its
 * transaction rolled back) and `imported` is 0.
 */
export interface BatchResult {
  readonly imported: number;
  /** Already in the store with the same content: left as it is. */
  readonly unchanged: number;
  readonly conflicts: readonly Conflict[];
  /** Tokens only: imported under a new id, their own being another token's in this store. */
  readonly renumbered: ReadonlyArray<{ readonly from: number; readonly to: number }>;
}

export interface StoreTransfer {
  /**
   * Runs `read` on one snapshot: a read transaction (SQLite; writers go on meanwhile) or a REPEATABLE
   * READ READ ONLY transaction (PostgreSQL). The handle must not be used for anything else meanwhile.
   */
  readSnapshot<T>(read: (snapshot: Snapshot) => Promise<T>): Promise<T>;
  /**
   * Each batch in one transaction, in order: a plant goes after every plant already stored, so the
   * order of the batches is the creation order. A key already stored with the same content is left
   * alone; with other content it is a conflict (see BatchResult). Nothing here queues webhook events.
   */
  importPlants(batch: readonly PlantRecord[], skipConflicts: boolean): Promise<BatchResult>;
  /** Keyed by hash; the id is kept when it is free, else a new one is given (BatchResult.renumbered). */
  importTokens(batch: readonly TokenTransferRecord[], skipConflicts: boolean): Promise<BatchResult>;
  /** Keyed by id. The per-user limit is not applied: the source store applied its own. */
  importWebhooks(batch: readonly EndpointTransferRecord[], skipConflicts: boolean): Promise<BatchResult>;
  /** Keyed by (endpoint, event id), whatever the stored event's state; each event's endpoint must exist. */
  importEvents(batch: readonly EventTransferRecord[], skipConflicts: boolean): Promise<BatchResult>;
}

/** A store that can be exported and imported (both backends; not the list-cache wrapper of a server). */
export interface TransferableStore extends Store {
  transfer(): StoreTransfer;
}

/** Raised inside a batch's transaction to roll it back; the batch's result is still returned. */
export class RollBack extends Error {
  readonly result: BatchResult;

  constructor(result: BatchResult) {
    super('batch rolled back');
    this.result = result;
  }
}

type Comparable = string | number | boolean | bigint | Date | null | readonly string[];

function same(a: Comparable, b: Comparable): boolean {
  if (a instanceof Date || b instanceof Date) return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.join(' ') === b.join(' ');
  return a === b;
}

/** The fields of `fields` in which the incoming record and the stored one differ. */
export function differingFields<T extends object>(incoming: T, stored: T, fields: ReadonlyArray<keyof T & string>): string[] {
  return fields.filter((f) => !same(incoming[f] as Comparable, stored[f] as Comparable));
}

/** The fields compared on import: everything but a token's id, which is kept only when free. */
export const PLANT_FIELDS = ['name', 'tag'] as const satisfies ReadonlyArray<keyof PlantRecord>;
export const TOKEN_FIELDS = ['user', 'scopes', 'admin', 'name', 'createdAt', 'expiresAt', 'revokedAt'] as const satisfies ReadonlyArray<keyof TokenTransferRecord>;
export const ENDPOINT_FIELDS = [
  'user', 'allUsers', 'url', 'description', 'secret', 'createdAt', 'disabledAt', 'disabledReason',
] as const satisfies ReadonlyArray<keyof EndpointTransferRecord>;
/** An event's progress (attempts, next attempt) moves on in its new store; its identity and body do not. */
export const EVENT_FIELDS = ['plantId', 'body'] as const satisfies ReadonlyArray<keyof EventTransferRecord>;

export const describePlant = (p: { owner: string; id: bigint }) => `plant owner ${JSON.stringify(p.owner)}, id ${p.id}`;
export const describeToken = (t: { hash: string }) => `token with hash ${t.hash.slice(0, 12)}…`;
export const describeEndpoint = (e: { id: string }) => `webhook endpoint ${e.id}`;
export const describeEvent = (e: { eventId: string; endpointId: string }) => `event ${e.eventId} for ${e.endpointId}`;

/** A tally of one batch as it is written; `result()` throws RollBack when conflicts must undo it. */
export class BatchTally {
  imported = 0;
  unchanged = 0;
  readonly conflicts: Conflict[] = [];
  readonly renumbered: Array<{ from: number; to: number }> = [];
  readonly #skipConflicts: boolean;

  constructor(skipConflicts: boolean) {
    this.#skipConflicts = skipConflicts;
  }

  /** Counts a key found already stored: unchanged when no field differs, else a conflict. */
  found(record: string, fields: readonly string[]): void {
    if (fields.length === 0) this.unchanged++;
    else this.conflicts.push({ record, fields });
  }

  result(): BatchResult {
    const result = { imported: this.imported, unchanged: this.unchanged, conflicts: this.conflicts, renumbered: this.renumbered };
    if (this.conflicts.length > 0 && !this.#skipConflicts) throw new RollBack({ ...result, imported: 0, renumbered: [] });
    return result;
  }
}
