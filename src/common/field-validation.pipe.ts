import { ArgumentMetadata, Injectable, ValidationPipe } from '@nestjs/common';
import type { ValidationError } from 'class-validator';
import type { IncomingMessage } from 'http';
import { CLS_REQ, ClsServiceManager } from 'nestjs-cls';
import { flattenValidationErrors, ValidationFailedException } from './errors';
import { escapePrototypeKeys, restorePrototypeKeys, unescapeKeys } from './prototype-keys';
import { installValidationMetadataCache } from './validation-metadata-cache';

installValidationMetadataCache();

/**
 * How unknown body properties are treated, as the Kubernetes API server does (`?fieldValidation=`):
 * - `Warn` (default): dropped; the request proceeds and each is named in a `Warning: 299` response header;
 * - `Strict`: 400 naming them;
 * - `Ignore`: dropped silently.
 * Unknown query parameters are always ignored (as Spring does). Wrong types and bounds of known fields are 400.
 */
export type FieldValidationMode = 'Strict' | 'Warn' | 'Ignore';
export const FIELD_VALIDATION_MODES: FieldValidationMode[] = ['Strict', 'Warn', 'Ignore'];
/** At most this many Warning headers name a field; one more says how many were left out. */
export const MAX_FIELD_WARNINGS = 10;

const WHITELIST = 'whitelistValidation';

/** Reads `fieldValidation` from a raw URL; an unknown value is a 400 naming the accepted ones. */
export function fieldValidationMode(url: string | undefined): FieldValidationMode {
  const q = url?.indexOf('?') ?? -1;
  if (!url || q < 0) return 'Warn';
  const raw = new URLSearchParams(url.slice(q + 1)).get('fieldValidation');
  if (raw === null || raw === '') return 'Warn';
  const mode = FIELD_VALIDATION_MODES.find((m) => m.toLowerCase() === raw.toLowerCase());
  if (!mode) {
    throw ValidationFailedException.forField(
      'fieldValidation',
      `fieldValidation must be one of ${FIELD_VALIDATION_MODES.join(', ')}`,
    );
  }
  return mode;
}

/** Separates unknown-property errors (class-validator's whitelist) from the real ones, at any depth. */
export function splitUnknownProperties(
  errors: ValidationError[],
  parent = '',
): { unknown: { path: string; target: object; property: string }[]; rest: ValidationError[] } {
  const unknown: { path: string; target: object; property: string }[] = [];
  const rest: ValidationError[] = [];
  for (const e of errors) {
    const path = parent ? `${parent}.${e.property}` : e.property;
    const { [WHITELIST]: whitelisted, ...constraints } = e.constraints ?? {};
    if (whitelisted !== undefined && e.target) unknown.push({ path, target: e.target, property: e.property });
    const inner = splitUnknownProperties(e.children ?? [], path);
    unknown.push(...inner.unknown);
    if (Object.keys(constraints).length || inner.rest.length) rest.push({ ...e, constraints, children: inner.rest });
  }
  return { unknown, rest };
}

/** Where the pipe (and `dropUnknownValue`) leave the warnings about dropped values on the (raw) request. */
const DROPPED_FIELDS = Symbol('droppedFields');

type RequestWithDropped = IncomingMessage & { [DROPPED_FIELDS]?: string[]; raw?: IncomingMessage & { [DROPPED_FIELDS]?: string[] } };

/** The current request (Nest's CLS keeps it), or undefined outside a request. */
function currentRequest(): RequestWithDropped | undefined {
  const cls = ClsServiceManager.getClsService();
  return cls.isActive() ? cls.get<RequestWithDropped | undefined>(CLS_REQ) : undefined;
}

function recordDropped(req: RequestWithDropped, messages: string[]): void {
  const target = req.raw ?? req;
  target[DROPPED_FIELDS] = [...(target[DROPPED_FIELDS] ?? []), ...messages];
}

/**
 * For a value inside a known field that the service does not know (e.g. an add-on name of another service's
 * catalog) and that can be dropped without changing what the request asks for: applies the request's
 * `fieldValidation` as unknown fields get it. Answers false under `Strict` (the caller answers 400); otherwise the
 * caller drops the value, and under `Warn` `message` becomes a `Warning: 299` header.
 */
export function dropUnknownValue(message: string): boolean {
  const req = currentRequest();
  const mode = fieldValidationMode(req?.url);
  if (mode === 'Strict') return false;
  if (mode === 'Warn' && req) recordDropped(req, [message]);
  return true;
}

/** Where other warnings of the request (e.g. cluster policies in Warn mode) wait for the same hook. */
const RESPONSE_WARNINGS = Symbol('responseWarnings');

/**
 * Adds `Warning: 299 - "<text>"` headers to the current request's response (through the same hook as the
 * unknown-field warnings; not capped like them). Outside a request (background work) it does nothing.
 */
export function addResponseWarnings(texts: string[]): void {
  const req = currentRequest();
  if (!req || !texts.length) return;
  const target = (req.raw ?? req) as IncomingMessage & { [RESPONSE_WARNINGS]?: string[] };
  target[RESPONSE_WARNINGS] = [...(target[RESPONSE_WARNINGS] ?? []), ...texts];
}

/** `Warning: 299` headers naming the dropped fields (and other warnings), added just before the response is sent. */
export function addFieldWarnings(fastify: {
  addHook(name: 'onSend', hook: (request: { raw: object }, reply: { header(k: string, v: string[]): unknown }, payload: unknown, done: (err: null, payload: unknown) => void) => void): unknown;
}): void {
  fastify.addHook('onSend', (request, reply, payload, done) => {
    const raw = request.raw as { [DROPPED_FIELDS]?: string[]; [RESPONSE_WARNINGS]?: string[] };
    const dropped = raw[DROPPED_FIELDS] ?? [];
    const others = raw[RESPONSE_WARNINGS] ?? [];
    if (dropped.length || others.length) reply.header('warning', [...warningHeaders(dropped), ...others.map((t) => `299 - ${JSON.stringify(t)}`)]);
    done(null, payload);
  });
}

function warningHeaders(messages: string[]): string[] {
  const shown = messages.slice(0, MAX_FIELD_WARNINGS).map((m) => `299 - ${JSON.stringify(m)}`);
  if (messages.length > MAX_FIELD_WARNINGS) {
    shown.push(`299 - ${JSON.stringify(`${messages.length - MAX_FIELD_WARNINGS} more unknown fields were dropped`)}`);
  }
  return shown;
}

/**
 * The global validation pipe: class-validator DTOs with Kubernetes-style field validation for bodies and
 * Spring-style leniency for query strings (unknown parameters are dropped without a word).
 */
@Injectable()
export class FieldValidationPipe extends ValidationPipe {
  constructor() {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      transform: true,
      transformOptions: { enableImplicitConversion: false },
      // The error tree must carry its objects (targets) so unknown properties can be dropped from them.
      validationError: { target: true, value: true },
      exceptionFactory: (errors) => errors,
    });
  }

  /**
   * Nest strips `constructor` and `prototype` keys at every depth, which silently lost data in maps (a label
   * named `constructor`). The JSON parser already refuses `__proto__` and `constructor.prototype` (prototype
   * poisoning) and such keys are escaped before transformation (see prototype-keys.ts), so nothing is
   * stripped here.
   */
  protected override stripProtoKeys(): void {}

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // What the validator does not validate (path strings, custom decorators such as the organisation context):
    // Nest's own handling, without walking the value for prototype keys (renaming and restoring them leaves it as it was).
    if (!metadata.metatype || !this.toValidate(metadata)) return super.transform(value, metadata);
    const isBody = metadata.type === 'body';
    const req = currentRequest();
    const mode: FieldValidationMode = isBody ? fieldValidationMode(req?.url) : 'Ignore';
    escapePrototypeKeys(value);
    try {
      const result = await super.transform(value, metadata);
      restorePrototypeKeys(result);
      return result;
    } catch (thrown) {
      if (!Array.isArray(thrown)) throw thrown;
      const errors = thrown as ValidationError[];
      const { unknown, rest } = splitUnknownProperties(errors);
      const unknownErrors = unknown.map((u) => ({ field: unescapeKeys(u.path), message: `unknown field "${unescapeKeys(u.path)}"` }));
      if (rest.length) {
        const known = flattenValidationErrors(rest).map((e) => ({ field: unescapeKeys(e.field), message: unescapeKeys(e.message) }));
        throw new ValidationFailedException(mode === 'Strict' ? [...unknownErrors, ...known] : known);
      }
      if (mode === 'Strict') throw new ValidationFailedException(unknownErrors);
      // Only unknown properties: drop them and go on with the transformed object (the target of every
      // top-level error is the root instance).
      for (const u of unknown) delete (u.target as Record<string, unknown>)[u.property];
      if (mode === 'Warn' && req) recordDropped(req, unknown.map((u) => `unknown field "${unescapeKeys(u.path)}"`));
      restorePrototypeKeys(errors[0].target);
      return errors[0].target;
    }
  }
}
