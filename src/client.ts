// plantstore/client: the typed client by the name it had before it became a package of its own. The
// same module as @plantstore/client, re-exported rather than copied, so that its classes are the same
// (an error from one passes `instanceof` of the other) and the server ships one client.
export * from '@plantstore/client';
