import { plantOf, plantOfColumns, samePlant, type NewPlant } from '../../domain/plant.js';
import type Database from './driver.js';
import type { SqliteFeedLog } from './feed.js';
import { storeError } from './errors.js';
import { PageReader } from './lists.js';
import type { WriteQueue } from './queue.js';
import type { FileState } from './state.js';
import type { SqliteWebhookStatements } from './webhook-statements.js';
import { assertReadable, type CacheablePlants, type CreateOutcome, type ListQuery, type PlantPage } from '../store.js';

/**
 * The plants facet on SQLite: creates and deletes in the write queue's group commits, lists read at
 * once (in WAL mode a read waits for no writer). It tells the list cache whether reads are refused now.
 */
export class SqlitePlants implements CacheablePlants {
  readonly #db: Database.Database;
  readonly #state: FileState;
  readonly #writes: WriteQueue;
  readonly #webhooks: SqliteWebhookStatements;
  readonly #feed: SqliteFeedLog;
  readonly #insertPlant: Database.Statement<[string, bigint, string, string | null]>;
  readonly #findPlant: Database.Statement<[string, bigint], { name: string; tag: string | null }>;
  readonly #deletePlant: Database.Statement<[string, bigint]>;
  readonly #pages: PageReader;

  constructor(
    db: Database.Database, state: FileState, writes: WriteQueue, webhooks: SqliteWebhookStatements, feed: SqliteFeedLog, deletePlant: string,
  ) {
    this.#feed = feed;
    this.#db = db;
    this.#state = state;
    this.#writes = writes;
    this.#webhooks = webhooks;
    this.#insertPlant = db.prepare(
      'INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT (owner, id) DO NOTHING',
    );
    this.#findPlant = db.prepare('SELECT name, tag FROM plants WHERE owner = ? AND id = ?');
    this.#deletePlant = db.prepare(deletePlant);
    this.#pages = new PageReader(db);
  }

  [assertReadable](): void {
    this.#state.assertReadable();
  }

  createPlant(owner: string, plant: NewPlant): Promise<CreateOutcome> {
    return this.#writes.add(() => {
      if (this.#insertPlant.run(owner, plant.id, plant.name, plant.tag ?? null).changes === 1) {
        this.#recordEvents(owner, plant);
        return 'created';
      }
      // Same transaction as the insert, so the row that conflicted is still there.
      const stored = this.#findPlant.get(owner, plant.id);
      if (!stored) throw new Error('conflicting plant row not found');
      return samePlant(plantOfColumns(stored), plantOf(plant)) ? 'replayed' : 'conflict';
    });
  }

  /**
   * The feed's event and the outbox, in the create's transaction: the events commit with the plant or
   * not at all. A failed statement rolls back only itself while the batch commits (see WriteQueue), so
   * when one fails, what the create wrote before it is removed again before the create fails. Webhook
   * events wake the dispatcher once the batch is committed (WriteQueue.wakeAfterCommit); the feed's
   * event is read once the batch is durable (SqliteFeed.written).
   */
  #recordEvents(owner: string, plant: NewPlant): void {
    let event: number | bigint | undefined;
    try {
      event = this.#feed.created(owner, plant);
      if (this.#webhooks.queueEvents(owner, plant)) this.#writes.wakeAfterCommit();
    } catch (error) {
      if (event !== undefined) this.#feed.withdraw(event);
      if (this.#db.inTransaction) this.#deletePlant.run(owner, plant.id);
      throw error;
    }
    this.#feed.written(event);
  }

  /** The list cache is wrappers/list-cache.ts's, around this facet. */
  cachedPage(): undefined {
    return undefined;
  }

  async listPlants(query: ListQuery): Promise<PlantPage> {
    this.#state.assertReadable();
    try {
      return this.#pages.read(query);
    } catch (error) {
      throw storeError(error);
    }
  }

  /** The feed's event is written from the row first, then the row deleted; a failed delete takes the event back. */
  deletePlant(owner: string, id: bigint): Promise<boolean> {
    return this.#writes.add(() => {
      const event = this.#feed.deleting(owner, id);
      if (event === undefined) return false;
      try {
        this.#deletePlant.run(owner, id);
      } catch (error) {
        this.#feed.withdraw(event);
        throw error;
      }
      this.#feed.written(event);
      return true;
    });
  }
}
