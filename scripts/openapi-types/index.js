// openapi-typescript builds its output with the TypeScript 5 compiler API (ts.factory and the printer),
// which TypeScript 7, the project's compiler, no longer has; it also declares typescript ^5 as a peer,
// which the project's root cannot satisfy. So it lives in this little package (a `file:` devDependency of
// plantstore), with a TypeScript 5 of its own in scripts/openapi-types/node_modules, and nothing else
// imports it: scripts/client-types.ts calls typesOf().
import openapiTS, { astToString } from 'openapi-typescript';

/** The TypeScript text openapi-typescript makes of an OpenAPI 3.x document (an object, not a URL). */
export async function typesOf(document) {
  return astToString(await openapiTS(document));
}
