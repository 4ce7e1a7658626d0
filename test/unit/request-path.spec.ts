import type { ExecutionContext } from '@nestjs/common';
import { ApiOkResponse } from '@nestjs/swagger';
import { of } from 'rxjs';
import { AlertingConfigurationResponse } from '../../src/observability/dto/alerting.dto';
import { PassThrough } from 'stream';
import { AuditInterceptor } from '../../src/audit/audit.interceptor';
import { SecretResponseInterceptor } from '../../src/common/secret-response.interceptor';
import pino from 'pino';
import { LazyRequestLogger } from '../../src/logging';
import { securityHeaders } from '../../src/http-hardening';
import { ApplicationConfig } from '@nestjs/core';
import { MUTATING_ROUTE, scopeGlobalInterceptors } from '../../src/common/route-interceptors';

/** What a pino logger at `level` writes, line by line. */
function capture(level: string) {
  const stream = new PassThrough();
  const lines: Record<string, unknown>[] = [];
  stream.on('data', (d: Buffer) => d.toString().split('\n').filter(Boolean).forEach((l) => lines.push(JSON.parse(l))));
  const logger = pino({ level, base: { service: 's' }, redact: { paths: ['*.secret'], censor: '[redacted]' } }, stream);
  return { logger, lines, flush: () => new Promise((r) => setImmediate(r)) };
}

describe('request logger made on demand', () => {
  it('makes no child for lines below the level and writes enabled lines with the request id', async () => {
    const { logger, lines, flush } = capture('warn');
    const child = jest.spyOn(logger, 'child');
    const log = new LazyRequestLogger(logger, { reqId: 'r-1' }, {});
    log.info({ a: 1 }, 'quiet');
    log.debug('quiet too');
    expect(log.isLevelEnabled('info')).toBe(false);
    expect(child).not.toHaveBeenCalled();
    log.warn({ status: 404, x: { secret: 'p' } }, 'request refused');
    await flush();
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toEqual([expect.objectContaining({ level: 40, service: 's', reqId: 'r-1', status: 404, x: { secret: '[redacted]' }, msg: 'request refused' })]);
    expect(Object.keys(lines[0]).slice(0, 4)).toEqual(['level', 'time', 'service', 'reqId']);
  });

  it('answers the same level, bindings and children as the child it stands for', () => {
    const { logger } = capture('info');
    const log = new LazyRequestLogger(logger, { reqId: 'r-2' }, {});
    expect(log.level).toBe('info');
    expect(log.bindings()).toEqual({ service: 's', reqId: 'r-2' });
    expect(log.child({ more: 1 }).bindings()).toEqual({ service: 's', reqId: 'r-2', more: 1 });
    log.level = 'error';
    expect(log.isLevelEnabled('warn')).toBe(false);
    expect(logger.level).toBe('info');
  });
});

describe('security headers', () => {
  it("are helmet's, computed once", () => {
    const headers = securityHeaders();
    expect(headers['content-security-policy']).toContain("default-src 'self'");
    expect(headers['content-security-policy']).toContain("img-src 'self' data: validator.swagger.io");
    expect(headers['x-content-type-options']).toBe('nosniff');
    expect(headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(headers['cross-origin-embedder-policy']).toBeUndefined();
  });
});

describe('interceptors scoped to the routes they act on', () => {
  // The audit interceptor is attached to POST, PUT, PATCH and DELETE routes only (src/app.factory.ts): this holds
  // while it passes every other request through untouched.
  it('the audit interceptor passes a GET through without a transaction, a recorder or metadata', () => {
    const untouched = () => {
      throw new Error('touched on a GET');
    };
    const interceptor = new AuditInterceptor(
      { run: untouched } as never,
      { take: untouched, takeAll: untouched } as never,
      { getAllAndOverride: untouched } as never,
    );
    const handled = of('answer');
    for (const method of ['GET', 'HEAD', 'OPTIONS']) {
      const context = { switchToHttp: () => ({ getRequest: () => ({ method }) }) } as unknown as ExecutionContext;
      expect(interceptor.intercept(context, { handle: () => handled })).toBe(handled);
    }
  });

  it('refuses to scope an interceptor that is not global (a renamed registration would leave routes unaudited)', () => {
    const config = new ApplicationConfig();
    const app = { get: (token: unknown) => (token === ApplicationConfig ? config : undefined) } as never;
    expect(() => scopeGlobalInterceptors(app, new Map([[AuditInterceptor, MUTATING_ROUTE]]))).toThrow('AuditInterceptor is not a global interceptor');
  });

  it('the secret interceptor acts only on handlers whose answers declare a secret', () => {
    const interceptor = new SecretResponseInterceptor();
    class Plain {
      list() {}
    }
    class WithSecret {
      @ApiOkResponse({ type: AlertingConfigurationResponse })
      get() {}
    }
    expect(interceptor.appliesTo(Plain.prototype.list)).toBe(false);
    expect(interceptor.appliesTo(WithSecret.prototype.get)).toBe(true);
  });
});
