/**
 * Where the request context (nestjs-cls, set up in src/database/database.module.ts) keeps Fastify's request id; the
 * logger reads it to tag every line of a request.
 */
export const CLS_REQUEST_ID = 'request.id';
