/**
 * Endpoint deletions made through this process's API, told to its dispatchers at once: an event of the
 * endpoint that a dispatcher claimed earlier and holds in its local queue is then dropped, not sent, so
 * that no attempt starts after DELETE /webhooks/{id} answered. (A deletion by another process, the CLI or
 * another instance, reaches a dispatcher only through the store: events it already held may still start
 * within their short local wait; see the README.) Endpoint ids are random and never reused, so a
 * listener of another app in the same process (tests) is told of ids it does not know, harmlessly.
 */
type Listener = (endpointId: string) => void;

const listeners = new Set<Listener>();

export function endpointDeleted(endpointId: string): void {
  for (const listener of listeners) listener(endpointId);
}

/** Returns the function that stops listening. */
export function onEndpointDeleted(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
