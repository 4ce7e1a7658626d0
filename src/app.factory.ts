import { DataSource } from 'typeorm';
import { ModulesContainer } from '@nestjs/core';
import { shiftTimeExamplesNow } from './common/openapi-examples';
import { MAX_PATH_PARAM_LENGTH, polishOpenApi } from './common/openapi-polish';
import { SERVICE_VERSION } from './common/service-version';
import { describeOperations, publicOperations, readRoutes } from './common/route-docs';
import { NestFactory } from '@nestjs/core';
import { LogController } from 'fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { randomBytes, randomUUID } from 'crypto';
import * as fs from 'fs';
import { Logger as PinoLogger } from 'nestjs-pino';
import * as path from 'path';
import { Client } from 'pg';
import { AppModule } from './app.module';
import { DemoDataService } from './demo/demo-data.service';
import { DEMO_PATH_PARAMETER_EXAMPLES } from './demo/demo-identities';
import { ServiceState } from './health/service-state';
import { hardenHttp } from './http-hardening';
import { ApplicationLogger, lazyRequestLoggerFactory, requestLogger } from './logging';
import { AppConfig, ConfigValidationError } from './config/app-config';
import { startEmbeddedPostgres, EmbeddedDatabase } from './database/embedded-postgres';
import { GlobalExceptionFilter, requestedPath, toErrorResponse } from './common/errors';
import { addFieldWarnings, FieldValidationPipe } from './common/field-validation.pipe';
import { documentPlainRepresentation, routeCompatUrl, servePlainRepresentation } from './compat/compat';
import { useCompiledResponseSerializers } from './common/response-serializers';
import { ConsoleLogger, Logger, NestInterceptor, RequestMethod, Type } from '@nestjs/common';
import { AuditInterceptor } from './audit/audit.interceptor';
import { IdempotencyInterceptor } from './idempotency/idempotency.interceptor';
import { MUTATING_ROUTE, RouteScope, scopeGlobalInterceptors } from './common/route-interceptors';
import { SecretResponseInterceptor } from './common/secret-response.interceptor';
import { retryReadsOnce } from './database/read-retry';
import { AUTHORIZE_DIALOG_AT_TOP_JS } from './swagger-ui-authorize';

/** proxy-addr's trust function for a hop count: hop 0 is the socket peer. */
function trustHops(hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops;
}

export interface RunningApp {
  app: NestFastifyApplication;
  embedded?: EmbeddedDatabase;
  /** Closes the app (finishing in-flight requests) and then the embedded database. */
  close(): Promise<void>;
}

const EMBEDDED_DB_NAME = 'cluster_management';

async function ensureDatabase(serverUrl: string, name: string): Promise<string> {
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** With the embedded database and no key configured, a key file is generated once under DATA_DIR. */
function resolveEncryptionKey(config: AppConfig): void {
  if (config.CREDENTIALS_ENCRYPTION_KEY) return;
  if (!config.embeddedDatabase) {
    throw new ConfigValidationError(
      'Invalid configuration:\n  CREDENTIALS_ENCRYPTION_KEY is required when DATABASE_URL is set (32 bytes as 64 hex characters or base64).',
    );
  }
  const file = path.resolve(config.DATA_DIR, 'credentials.key');
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
  }
  config.CREDENTIALS_ENCRYPTION_KEY = fs.readFileSync(file, 'utf8').trim();
}

/** The OpenAPI document as served: the interface's, with the plain representation of /admin/v1 and /compat (src/compat). */
export function buildOpenApiDocument(app: NestFastifyApplication): OpenAPIObject {
  return documentPlainRepresentation(interfaceDocument(app));
}

function interfaceDocument(app: NestFastifyApplication): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('Cluster Management Service')
    .setDescription(
      'Control-plane API for organisations managing container-orchestration clusters. ' +
        'Authenticate with `Authorization: Token <personal access token>` or `Authorization: Bearer <PAT or OIDC token>`. ' +
        'Errors share one body: {timestamp, status, error, message, path, errors?}. ' +
        'Paged lists take page (0-based; negative or not a number means 0), size (default 50, clamped to 500; ' +
        'below 1 or not a number means the default) and sort=property[,asc|desc][,ignorecase] (repeatable; each ' +
        'list names the properties it can sort by, others are 400). ' +
        'A page answers `content` (the items of this page) with `number` (0-based), `size` (the page size asked for), ' +
        '`numberOfElements` (items on this page), `totalElements`, `totalPages`, `first`, `last`, `empty` and `pageable` ' +
        '(`offset`, `pageNumber`, `pageSize`, `paged`, `unpaged`). Its `sort` (in the page and in `pageable`) comes in one of two ' +
        "forms, and each list's description names which: form A is an object `{empty, sorted, unsorted}`, form B an array of " +
        'the sort orders applied, each `{property, direction, ascending, ignoreCase, nullHandling}`. ' +
        'Unknown query parameters are ignored. Unknown body properties follow the query parameter ' +
        '`fieldValidation` (as the Kubernetes API server does): `Warn` (default) drops them and names each in a ' +
        '`Warning: 299 - "unknown field \\"x\\""` response header (at most 10, then one saying how many more), ' +
        '`Strict` answers 400 naming them, `Ignore` drops them silently. Wrong types and bounds of known fields ' +
        'are always 400. A body with more than 256 properties in one object, more than 20,000 values in all or ' +
        'nesting deeper than 32 levels is refused with 400 before validation; validation errors list at most ' +
        '20 fields. An empty body with Content-Type application/json is a request without a body.',
    )
    .setVersion(SERVICE_VERSION)
    .addApiKey(
      {
        type: 'apiKey',
        in: 'header',
        name: 'Authorization',
        description:
          'Start here. Type the whole header value: the word `Token`, a space, then your personal access token, e.g. ' +
          '`Token cms_...` (this scheme sends what you type as it is). A fresh install printed an administrator\'s token at ' +
          'its first start (also in `.data/admin-token`); POST /sts/v1/personal-access-tokens makes more.',
      },
      'token',
    )
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description:
          'A personal access token, or an OIDC access token (a JWT) handled as RFC8725 advises: the signature is checked against ' +
          "the issuer's published keys (unsigned `alg: none` tokens are refused), and so are the issuer, the audience, expiry and not-before.",
      },
      'bearer',
    )
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'opaque',
        description:
          'A node join token (node registrations only): an opaque random value stored as a hash, not a JWT, so RFC8725 does not apply.',
      },
      'nodeJoinToken',
    )
    .addSecurityRequirements('token')
    .addSecurityRequirements('bearer');
  const routes = readRoutes(app.get(ModulesContainer));
  return polishOpenApi(describeOperations(SwaggerModule.createDocument(app, builder.build()), routes), publicOperations(routes), DEMO_PATH_PARAMETER_EXAMPLES);
}

export async function createApp(
  config: AppConfig,
  options: {
    quiet?: boolean;
    /** Where logs go instead of stdout (tests read them). */
    logDestination?: NodeJS.WritableStream;
    /** Tests only: called with the Fastify instance while hooks can still be added (the tests' response checks). */
    instrument?: (fastify: FastifyInstance) => void;
    /** Aborted by a signal during start-up: start-up ends with the signal's reason where it waits (the migration lock). */
    signal?: AbortSignal;
    /** Told why start-up waits for the database schema (MIGRATE_AT_START off and migrations missing). */
    onSchemaWait?: (reason: string) => void;
  } = {},
): Promise<RunningApp> {
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = config.DATABASE_URL;
  if (config.embeddedDatabase && config.NODE_ENV === 'production' && !config.ALLOW_EMBEDDED_DATABASE) {
    throw new ConfigValidationError(
      'Invalid configuration:\n  DATABASE_URL is required when NODE_ENV=production (the embedded PostgreSQL keeps data inside the ' +
        'container); set ALLOW_EMBEDDED_DATABASE=true to run a throwaway demo anyway.',
    );
  }
  resolveEncryptionKey(config);
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres(config.DATA_DIR);
    databaseUrl = await ensureDatabase(embedded.url, EMBEDDED_DB_NAME);
  }
  // Made in the try below; closed if the start-up fails after it, so what its start-up hooks opened (pools, LISTEN
  // connections and their reconnect timers) does not outlive a failed start in the same process (tests, a retry).
  let started: NestFastifyApplication | undefined;
  try {
    options.signal?.throwIfAborted();
    const adapter = new FastifyAdapter({
      // A hop count trusts that many proxies nearest to the service; a list trusts those addresses only.
      trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
      bodyLimit: config.BODY_LIMIT_BYTES,
      // Fastify's own error and 404 answers use the service's error body.
      return503OnClosing: true,
      // At close, connections without a request in flight are closed at once (keep-alive clients do not hold
      // the shutdown); those with one close after its response (the onSend hook below).
      forceCloseConnections: 'idle',
      requestIdHeader: 'x-request-id',
      loggerInstance: options.quiet ? undefined : requestLogger(config, options.logDestination),
      // One line per request, written when it completes (src/http-hardening.ts), instead of Fastify's two; the request
      // id is logged as reqId. (Fastify 5 takes both from a log controller: the top-level options are deprecated.)
      logController: new LogController({ requestIdLogLabel: 'reqId', disableRequestLogging: true }),
      // Each request's logger (request.log) becomes a pino child only when it writes a line (src/logging.ts).
      childLoggerFactory: lazyRequestLoggerFactory as unknown as FastifyServerOptions['childLoggerFactory'],
      // Router options under routerOptions (the top-level ones are deprecated in Fastify 5).
      routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
      // Router-level errors (URL too long, malformed encoding) get the service's error body too.
      frameworkErrors: (error: Error, request: FastifyRequest, reply: FastifyReply) => {
        const { status, body } = toErrorResponse(error, requestedPath(request));
        void reply.status(status).send(body);
      },
      genReqId: () => randomUUID(),
      // /compat/api/v1/... is the route /api/v1/... (src/compat).
      rewriteUrl: routeCompatUrl,
    });
    const state = new ServiceState(embedded, options.signal, options.onSchemaWait);
    const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, databaseUrl, state, options.logDestination), adapter, {
      bufferLogs: true,
      // A failed start-up (or one stopped by a signal) ends in createApp's caller, which says why and exits, instead
      // of Nest aborting the process.
      abortOnError: false,
      // The JSON parser is registered below (empty bodies are no body), not by Nest.
      bodyParser: false,
      // Until the application logger takes over (below), and for a start-up that fails before: JSON lines too.
      logger: options.quiet ? false : new ConsoleLogger({ json: true, colors: false }),
    });
    started = app;
    if (!options.quiet) app.useLogger(new ApplicationLogger(app.get(PinoLogger)));
    else app.useLogger(false);
    // The audit and secret interceptors run only on the routes they act on, so most reads run no interceptor.
    scopeGlobalInterceptors(
      app,
      // Outermost first: secrets are presented to the reader last, also on a replayed answer (the idempotency
      // interceptor stores and replays the answer as the handler gave it), and the audit transaction is innermost.
      new Map<Type<NestInterceptor>, RouteScope<any>>([
        [SecretResponseInterceptor, (({ handler }, secrets) => secrets.appliesTo(handler)) satisfies RouteScope<SecretResponseInterceptor>],
        // POST and PATCH requests with an Idempotency-Key (the others pass through it).
        [IdempotencyInterceptor, ({ method }) => method === RequestMethod.POST || method === RequestMethod.PATCH],
        // It acts on POST, PUT, PATCH and DELETE requests only (the transaction with its audit rows).
        [AuditInterceptor, MUTATING_ROUTE],
      ]),
    );
    // A GET whose database connection was lost runs once more on a fresh one (issue 42).
    retryReadsOnce(app);
    app.useGlobalPipes(new FieldValidationPipe());
    app.useGlobalFilters(new GlobalExceptionFilter());
    await hardenHttp(app, config);
    const fastify = app.getHttpAdapter().getInstance();
    // While draining, every response closes its connection, so a keep-alive client neither holds the shutdown
    // nor sends its next request to an instance that is going away.
    fastify.addHook('onSend', (_request, reply, payload, done) => {
      if (state.draining) void reply.header('connection', 'close');
      done(null, payload);
    });
    // JSON bodies only: without a text parser, other content types are 415.
    fastify.removeContentTypeParser(['text/plain']);
    // An empty body with a JSON content type is a request without a body (clients send the header on
    // every DELETE and bodiless POST); anything else goes to Fastify's own (prototype-poisoning-safe) parser.
    addFieldWarnings(fastify);
    const jsonParser = fastify.getDefaultJsonParser('error', 'error');
    fastify.removeContentTypeParser('application/json');
    fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      if (typeof body === 'string' && body.trim() === '') return done(null, undefined);
      jsonParser(request, body as string, done);
    });
    // /compat and /admin/v1 answer the original clients' plain representation, mapped from the interface's schemas.
    const interfaceDoc = interfaceDocument(app);
    servePlainRepresentation(fastify, interfaceDoc, app.get(DataSource));
    const document = documentPlainRepresentation(interfaceDoc);
    // Answers of the documented 2xx schemas through fast-json-stringify, compiled from this document (before
    // app.init() registers the routes); under jest (NODE_ENV=test) each answer is compared with JSON.stringify's
    // and a difference is a 500, so every e2e test checks the schemas of what it calls (src/common/response-serializers.ts).
    const serializerLog = new Logger('ResponseSerializers');
    useCompiledResponseSerializers(fastify, document, {
      check: process.env.NODE_ENV === 'test',
      warn: (m) => serializerLog.warn(m),
    });
    // A newcomer opening the service's address lands on the Swagger UI.
    fastify.get('/', (_request, reply) => reply.redirect('/swagger-ui', 302));
    SwaggerModule.setup('swagger-ui', app, document, {
      jsonDocumentUrl: 'v3/api-docs',
      yamlDocumentUrl: 'v3/api-docs.yaml',
      // The filter box over the tags, links to each operation (#/Tag/operationId), the token kept across reloads, and
      // how long each Try it out took.
      swaggerOptions: { filter: true, deepLinking: true, persistAuthorization: true, displayRequestDuration: true },
      // The Authorize dialog opens at its top, in the `token` scheme's field (Swagger UI would focus the last scheme's).
      customJsStr: AUTHORIZE_DIALOG_AT_TOP_JS,
      // Swagger UI's pre-filled times are relative to when it is opened (a silence ending in two hours, a token
      // expiring in a month); the document itself (/v3/api-docs, docs/openapi.json) keeps them as written.
      patchDocumentOnRequest: (req: unknown, _res: unknown, doc: OpenAPIObject) => (String((req as { url?: string }).url).endsWith('/swagger-ui-init.js') ? shiftTimeExamplesNow(doc) : doc),
    });
    options.instrument?.(fastify);
    await app.init();
    // After every start-up hook (bootstrap administrator, catalog): the demo organisation of a fresh install.
    await app.get(DemoDataService).seedIfFresh();
    await fastify.ready();
    return {
      app,
      embedded,
      /**
       * Graceful shutdown: readiness answers 503 at once (load balancers stop sending), requests keep being
       * served for SHUTDOWN_DELAY_MS, then the server stops accepting and in-flight requests finish (bounded by
       * SHUTDOWN_GRACE_MS); only then do the background loops finish their current step and the database pool
       * and the embedded database close, so no request in flight loses its database.
       */
      async close() {
        state.draining = true;
        if (config.SHUTDOWN_DELAY_MS > 0) await new Promise((r) => setTimeout(r, config.SHUTDOWN_DELAY_MS));
        const closed = fastify.close();
        const drained = await Promise.race([
          closed.then(() => true),
          new Promise<boolean>((r) => setTimeout(() => r(false), config.SHUTDOWN_GRACE_MS).unref()),
        ]);
        // Requests still running after the grace period are cut off, so the shutdown does not wait for them.
        if (!drained) fastify.server.closeAllConnections();
        await closed;
        await app.close();
        if (embedded) await embedded.stop();
      },
    };
  } catch (e) {
    await started?.close().catch(() => undefined);
    if (embedded) await embedded.stop();
    throw e;
  }
}
