import type { ExecutionContext, INestApplication, NestInterceptor, Type } from '@nestjs/common';
import { Observable } from 'rxjs';
import { RequestMethod } from '@nestjs/common';
import { INTERCEPTORS_METADATA, METHOD_METADATA } from '@nestjs/common/constants';
import { ApplicationConfig, MetadataScanner, ModulesContainer } from '@nestjs/core';

/** A route as its interceptors are decided: its HTTP method, handler and controller. */
export interface RouteTarget {
  method: RequestMethod;
  handler: object;
  controller: Type<unknown>;
}

/** Whether an interceptor (the instance given) acts on a route at all; where it does not, it would only pass the call through. */
export type RouteScope<T extends NestInterceptor = NestInterceptor> = (route: RouteTarget, interceptor: T) => boolean;

/**
 * Moves global interceptors (APP_INTERCEPTOR) onto the routes they act on. Nest runs every global interceptor on
 * every route, and a route with any interceptor pays for the chain on each request (an rxjs pipeline per
 * interceptor, about 17 KB of allocation for three) even where each one passes the call through untouched, as the
 * audit interceptor does for a GET. Each scoped interceptor instance is put first on the routes its scope accepts,
 * in the order `scopes` lists them, as if declared there with @UseInterceptors (so after class-level ones: the
 * project has none); a route that none of them acts on runs no interceptor.
 *
 * Global interceptors that are plain objects passing every call through without looking at it (nestjs-cls registers
 * one when its own interceptor is not mounted) leave the list: they are on no route.
 *
 * Call it after NestFactory.create() (global interceptors are instantiated then) and before app.init() (routes
 * read their interceptors then). An interceptor named here that is not global is an error, so a renamed or
 * removed registration does not silently drop its interceptor from every route.
 */
export function scopeGlobalInterceptors(app: INestApplication, scopes: Map<Type<NestInterceptor>, RouteScope<any>>): void {
  const globals = app.get(ApplicationConfig).getGlobalInterceptors();
  // In the order `scopes` lists them (outermost first), whatever order the modules registered them in.
  const scoped = [...scopes.keys()].flatMap((type) => globals.filter((i) => i.constructor === type));
  for (const type of scopes.keys()) {
    if (!scoped.some((i) => i.constructor === type)) throw new Error(`${type.name} is not a global interceptor: nothing to scope`);
  }
  // getGlobalInterceptors() answers the list itself; the scoped ones and the pass-throughs leave it.
  for (const i of [...scoped, ...globals.filter(passesThrough)]) globals.splice(globals.indexOf(i), 1);
  const scanner = new MetadataScanner();
  const seen = new Set<object>();
  for (const mod of app.get(ModulesContainer).values()) {
    for (const wrapper of mod.controllers.values()) {
      const controller = wrapper.metatype as Type<unknown> | undefined;
      if (!controller?.prototype) continue;
      // Every method the router maps, inherited ones included (the router scans the same way).
      for (const name of scanner.getAllMethodNames(controller.prototype)) {
        const handler = (controller.prototype as Record<string, unknown>)[name] as object;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (method === undefined || seen.has(handler)) continue;
        seen.add(handler);
        const own = scoped.filter((i) => scopes.get(i.constructor as Type<NestInterceptor>)!({ method, handler, controller }, i));
        if (!own.length) continue;
        // Instances of the scoped types already there were put by an earlier application in this process (tests
        // start several): they belong to that one, which may be closed, so this application's take their place.
        const declared = ((Reflect.getMetadata(INTERCEPTORS_METADATA, handler) ?? []) as unknown[]).filter(
          (i) => !(i && typeof i === 'object' && scopes.has(i.constructor as Type<NestInterceptor>)),
        );
        Reflect.defineMetadata(INTERCEPTORS_METADATA, [...own, ...declared], handler);
      }
    }
  }
}

/**
 * A plain object (not an instance of a class: those are never called here) whose `intercept` answers the handler's
 * own stream without reading anything of the context it is given.
 */
function passesThrough(interceptor: NestInterceptor): boolean {
  if (Object.getPrototypeOf(interceptor) !== Object.prototype) return false;
  const handled = new Observable<unknown>();
  const untouchable = new Proxy({} as ExecutionContext, {
    get() {
      throw new Error('read');
    },
  });
  try {
    return interceptor.intercept(untouchable, { handle: () => handled }) === handled;
  } catch {
    return false;
  }
}

/** Routes whose requests may change something: POST, PUT, PATCH, DELETE, and routes of every method. */
export const MUTATING_ROUTE: RouteScope = ({ method }) =>
  method === RequestMethod.POST || method === RequestMethod.PUT || method === RequestMethod.PATCH || method === RequestMethod.DELETE || method === RequestMethod.ALL;
