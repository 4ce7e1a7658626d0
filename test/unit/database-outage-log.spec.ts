import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { DatabaseOutageLog, OUTAGE_SUMMARY_EVERY_MS } from '../../src/database-outage-log';

type Line = { level: string; fields: Record<string, unknown>; message: string };

function recorder(lines: Line[]): FastifyBaseLogger {
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => void lines.push({ level, fields, message });
  return { error: at('error'), warn: at('warn'), info: at('info') } as unknown as FastifyBaseLogger;
}

const failed = (code: string) => ({ raw: { databaseUnavailable: true, databaseUnavailableCode: code }, routeOptions: { url: '/api/v1/x' } }) as unknown as FastifyRequest;
const ok = { raw: {}, routeOptions: { url: '/api/v1/x' } } as unknown as FastifyRequest;
const health = { raw: {}, routeOptions: { url: '/health' } } as unknown as FastifyRequest;

describe('the log of a database outage', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('a 40 s outage at 170 failed requests a second is six lines: start, one summary per 10 s, end', () => {
    const lines: Line[] = [];
    const log = new DatabaseOutageLog(recorder(lines));
    expect(log.observe(ok, 200)).toBe(false);
    for (let tick = 0; tick < 400; tick++) {
      // 17 requests each 100 ms, two causes; the liveness probe (200) does not end the outage.
      for (let i = 0; i < 17; i++) expect(log.observe(failed(i % 2 ? '57P01' : 'ECONNREFUSED'), 503)).toBe(true);
      expect(log.observe(health, 200)).toBe(false);
      jest.advanceTimersByTime(100);
    }
    expect(log.down).toBe(true);
    log.observe(ok, 200);
    expect(log.down).toBe(false);
    expect(lines.map((l) => [l.level, l.fields.event])).toEqual([
      ['error', 'database_unavailable'],
      ...Array(40_000 / OUTAGE_SUMMARY_EVERY_MS).fill(['warn', 'database_unavailable_summary']),
      ['info', 'database_available'],
    ]);
    expect(lines[1].fields).toMatchObject({ requests: 1700, codes: { '57P01': 800, ECONNREFUSED: 900 } });
    expect(lines.at(-1)!.fields).toMatchObject({ requests: 6800, outageSeconds: 40 });
  });

  it('a short outage is two lines, and the next one starts afresh', () => {
    const lines: Line[] = [];
    const log = new DatabaseOutageLog(recorder(lines));
    for (let i = 0; i < 3; i++) log.observe(failed('25006'), 503);
    log.observe(ok, 201);
    log.observe(failed('pool-timeout'), 503);
    log.observe(ok, 200);
    expect(lines.map((l) => [l.fields.event, l.fields.code ?? l.fields.requests])).toEqual([
      ['database_unavailable', '25006'],
      ['database_available', 3],
      ['database_unavailable', 'pool-timeout'],
      ['database_available', 1],
    ]);
  });
});
