/** The TypeScript text openapi-typescript makes of an OpenAPI 3.x document (an object, not a URL). */
export function typesOf(document: object): Promise<string>;
