import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { map, Observable } from 'rxjs';
import { DeclaredSecret, presentSecret, SecretReader, secretReaderOf, secretsOf } from './secret-fields';

type Dto = DeclaredSecret['dto'];

/** The metadata keys @nestjs/swagger's decorators write (its constants are not exported). */
const DECORATORS = {
  API_RESPONSE: 'swagger/apiResponse',
  API_EXTRA_MODELS: 'swagger/apiExtraModels',
  API_MODEL_PROPERTIES: 'swagger/apiModelProperties',
  API_MODEL_PROPERTIES_ARRAY: 'swagger/apiModelPropertiesArray',
} as const;
/** Turns an answer into what the reader may see; returns the value itself when nothing changes. */
type Presenter = (value: unknown, reader: SecretReader) => unknown;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The class a property's OpenAPI metadata names (`type: X`, `type: [X]`, `type: () => X`), if it is a DTO class. */
function propertyClass(meta: { type?: unknown } | undefined): Dto | null {
  let t = Array.isArray(meta?.type) ? meta!.type[0] : meta?.type;
  // A lazy resolver `() => X` (an arrow function: no prototype) names the class it returns.
  if (typeof t === 'function' && !t.prototype) {
    try {
      t = (t as () => unknown)();
    } catch {
      return null;
    }
  }
  return typeof t === 'function' && t.prototype && Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES_ARRAY, t.prototype) ? (t as Dto) : null;
}

const eachItem =
  (item: Presenter): Presenter =>
  (v, reader) => {
    if (!Array.isArray(v)) return item(v, reader);
    let changed = false;
    const out = v.map((x) => {
      const y = item(x, reader);
      if (y !== x) changed = true;
      return y;
    });
    return changed ? out : v;
  };

/**
 * Answers show each declared secret as its reader may see it (secret-fields.ts): the presenter of a handler is derived
 * once from the answer type its OpenAPI decorators name (`@ApiOkResponse({type})`, or the model of `@ApiPageResponse`,
 * whose items are the page's `content`) and the `@Secret` declarations on that class and the classes it holds.
 */
@Injectable()
export class SecretResponseInterceptor implements NestInterceptor {
  private readonly byHandler = new WeakMap<object, Presenter | null>();
  private readonly byClass = new Map<Dto, Presenter | null>();

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const presenter = this.presenterOf(context.getHandler());
    if (!presenter) return next.handle();
    const request = context.switchToHttp().getRequest();
    return next.handle().pipe(map((body) => presenter(body, secretReaderOf(request))));
  }

  /** Whether answers of `handler` hold a declared secret (else this interceptor has nothing to do on its route). */
  appliesTo(handler: object): boolean {
    return this.presenterOf(handler) !== null;
  }

  private presenterOf(handler: object): Presenter | null {
    let presenter = this.byHandler.get(handler);
    if (presenter === undefined) {
      presenter = this.presenterOfHandler(handler);
      this.byHandler.set(handler, presenter);
    }
    return presenter;
  }

  private presenterOfHandler(handler: object): Presenter | null {
    const responses = (Reflect.getMetadata(DECORATORS.API_RESPONSE, handler) ?? {}) as Record<string, { type?: unknown; schema?: unknown }>;
    const parts: Presenter[] = [];
    for (const [status, response] of Object.entries(responses)) {
      if (!/^2\d\d$/.test(status)) continue;
      const cls = propertyClass(response);
      const own = cls ? this.presenterOfClass(cls) : null;
      if (own) parts.push(eachItem(own));
      if (response.schema) {
        // A page (`@ApiPageResponse`): its model is among the handler's extra models; its items are `content`.
        for (const model of (Reflect.getMetadata(DECORATORS.API_EXTRA_MODELS, handler) ?? []) as Dto[]) {
          const item = this.presenterOfClass(model);
          if (!item) continue;
          const content = eachItem(item);
          parts.push((v, reader) => {
            if (!isRecord(v) || !Array.isArray(v.content)) return v;
            const next = content(v.content, reader);
            return next === v.content ? v : { ...v, content: next };
          });
        }
      }
    }
    if (!parts.length) return null;
    return (v, reader) => parts.reduce((acc, p) => p(acc, reader), v);
  }

  /** The presenter of a DTO class, or null when neither it nor a class it holds has a secret. */
  presenterOfClass(cls: Dto): Presenter | null {
    if (this.byClass.has(cls)) return this.byClass.get(cls)!;
    this.byClass.set(cls, null); // a class that holds itself: the inner occurrence adds nothing new
    const props: [string, Presenter][] = [];
    const declared = secretsOf(cls);
    for (const [name, d] of declared) props.push([name, (v, reader) => presentSecret(d.options, v, reader)]);
    const names = ((Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES_ARRAY, cls.prototype) ?? []) as string[]).map((k) => k.slice(1));
    for (const name of names) {
      if (declared.has(name)) continue;
      const nested = propertyClass(Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES, cls.prototype, name));
      const inner = nested ? this.presenterOfClass(nested) : null;
      if (inner) props.push([name, eachItem(inner)]);
    }
    const presenter: Presenter | null = props.length
      ? (v, reader) => {
          if (!isRecord(v)) return v;
          let out = v;
          for (const [name, p] of props) {
            if (!Object.hasOwn(v, name)) continue;
            const next = p(v[name], reader);
            if (next === v[name]) continue;
            if (out === v) out = { ...v };
            out[name] = next;
          }
          return out;
        }
      : null;
    this.byClass.set(cls, presenter);
    return presenter;
  }
}
