import { parentPort, workerData, type MessagePort } from 'node:worker_threads';

/** An error as a worker thread posts it (an Error itself does not keep its `code` through postMessage). */
export interface ThreadError {
  readonly code?: string | undefined;
  readonly message: string;
}

/** `error`'s code and message, to post. */
export function threadError(error: unknown): ThreadError {
  return { code: (error as { code?: string }).code, message: (error as Error).message };
}

/** Made into an Error again on the other side, `code` included. */
export function revived(error: ThreadError): Error & { code?: string | undefined } {
  return Object.assign(new Error(error.message), { code: error.code });
}

/**
 * For the module a worker thread runs (this folder's others, started by start.ts): the workerData it
 * was started with, as its module declares it, and its port to the thread that started it, which takes
 * only the messages that module declares.
 */
export function inThread<Data, Message>(): { readonly data: Data; readonly port: MessagePort; post(message: Message): void } {
  const port = parentPort;
  if (port === null) throw new Error('this module runs in a worker thread (see store/sqlite/workers/start.ts)');
  return { data: workerData as Data, port, post: (message) => port.postMessage(message) };
}
