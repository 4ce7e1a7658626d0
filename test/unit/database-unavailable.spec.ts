import { QueryFailedError, QueryRunnerAlreadyReleasedError, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { databaseUnavailable } from '../../src/common/database-unavailable';
import { DatabaseUnavailableError, mapDatabaseError, toErrorResponse } from '../../src/common/errors';

const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('database errors that mean "unavailable now" (503 with Retry-After)', () => {
  it.each([
    [new QueryRunnerAlreadyReleasedError(), 'connection-lost', 'QueryRunnerAlreadyReleasedError'],
    [new QueryRunnerProviderAlreadyReleasedError(), 'connection-lost', 'QueryRunnerProviderAlreadyReleasedError'],
    [new Error('Connection terminated unexpectedly'), 'connection-lost', 'connection-terminated'],
    [new Error('Client has encountered a connection error and is not queryable'), 'connection-lost', 'connection-terminated'],
    [pgError('57P01', 'terminating connection due to administrator command'), 'connection-lost', '57P01'],
    [pgError('57P02'), 'connection-lost', '57P02'],
    [pgError('57P03', 'the database system is starting up'), 'connection-refused', '57P03'],
    [pgError('53300', 'sorry, too many clients already'), 'connection-refused', '53300'],
    [pgError('08006'), 'connection-lost', '08006'],
    [pgError('08001'), 'connection-refused', '08001'],
    [pgError('08P01'), 'connection-lost', '08P01'],
    [pgError('ECONNRESET', 'read ECONNRESET'), 'connection-lost', 'ECONNRESET'],
    [pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'), 'connection-refused', 'ECONNREFUSED'],
    [Object.assign(new AggregateError([pgError('ECONNREFUSED'), pgError('ECONNREFUSED')]), {}), 'connection-refused', 'ECONNREFUSED'],
    [pgError('25006', 'cannot execute UPDATE in a read-only transaction'), 'read-only', '25006'],
    [new QueryFailedError('UPDATE x', [], pgError('25006', 'cannot execute UPDATE in a read-only transaction')), 'read-only', '25006'],
    [new Error('timeout exceeded when trying to connect'), 'timeout', 'pool-timeout'],
    [pgError('57014', 'canceling statement due to statement timeout'), 'timeout', '57014'],
  ])('%s is %s (%s)', (err, cause, code) => {
    expect(databaseUnavailable(err)).toEqual({ cause, code });
    const mapped = mapDatabaseError(err);
    expect(mapped).toBeInstanceOf(DatabaseUnavailableError);
    const { status, body, headers } = toErrorResponse(err, '/api/v1/x');
    expect(status).toBe(503);
    expect(headers).toEqual({ 'retry-after': '2' });
    expect(body.message).toContain(`(${code})`);
  });

  it.each([
    [pgError('23505', 'duplicate key value violates unique constraint')],
    [new QueryFailedError('SELECT', [], pgError('42P01', 'relation does not exist'))],
    [new Error('Cannot read properties of undefined')],
  ])('%s is not', (err) => {
    expect(databaseUnavailable(err)).toBeNull();
  });
});
