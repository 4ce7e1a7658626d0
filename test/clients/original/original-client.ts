/**
 * The original Go client's transport as it behaves on the wire, written from reading it (resty with a base URL):
 * every request carries `Accept` and `Content-Type: application/json`, `User-Agent: client-go` and
 * `Authorization: Token <pat>`; a body is the JSON of the Go struct (sent only where the client sets one);
 * a non-2xx answer is the error `<status>: <message>`; a 2xx answer is decoded into the function's struct, and a
 * decode error fails the call. Lists go through `GetPaged`: `page=0,1,...` until `last`, at most 101 pages.
 */
import type { TestApp } from '../../support/test-app';
import { DecodeProblem, decodeProblems, GoType, slice } from './go-json';
import { ErrorBody, PagedResult } from './client-types';

export class ClientCallError extends Error {
  constructor(
    message: string,
    readonly problems: DecodeProblem[] = [],
  ) {
    super(message);
  }
}

const MAX_PAGING_LOOPS = 100;

export interface SentRequest {
  method: string;
  path: string;
}

export class OriginalClient {
  /** Every request sent, for the table's request column. */
  readonly sent: SentRequest[] = [];

  constructor(
    private readonly t: TestApp,
    /** The `APIUrl` the client is given: '' (the service's root) or '/compat'. */
    readonly apiUrl: string,
    private readonly token: string,
  ) {}

  /** One request as resty sends it; answers the status and the parsed body (or the text). */
  async raw(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    this.sent.push({ method, path });
    const agent = this.t.http();
    const call = { GET: agent.get, POST: agent.post, PUT: agent.put, PATCH: agent.patch, DELETE: agent.delete }[method].bind(agent);
    let req = call(`${this.apiUrl}${path}`)
      .set('Accept', 'application/json')
      .set('Content-Type', 'application/json')
      .set('User-Agent', 'client-go')
      .set('Authorization', `Token ${this.token}`);
    if (body !== undefined) req = req.send(JSON.stringify(body));
    const res = await req;
    let parsed: unknown = res.text;
    try {
      parsed = res.text ? JSON.parse(res.text) : undefined;
    } catch {
      // not JSON: the client keeps the text as the error message
    }
    return { status: res.status, body: parsed };
  }

  /** CheckResponse: non-2xx is `<status>: <message>` (the error body's message, or the whole text). */
  private check(res: { status: number; body: unknown }): void {
    if (res.status >= 200 && res.status < 300) return;
    const message =
      res.body && typeof res.body === 'object' && decodeProblems(ErrorBody, res.body).length === 0
        ? String((res.body as { message?: unknown }).message ?? '')
        : String(res.body ?? '');
    throw new ClientCallError(`${res.status}: ${message}`);
  }

  /** A call with `SetResult(&T)`: answers the decoded value (the JSON, checked against T). */
  async result<T = Record<string, unknown>>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, type: GoType, body?: unknown): Promise<T> {
    const res = await this.raw(method, path, body);
    this.check(res);
    const problems = decodeProblems(type, res.body);
    const errors = problems.filter((p) => p.kind !== 'missing');
    if (errors.length) throw new ClientCallError(errors[0].message, problems);
    if (problems.length) throw new ClientCallError(`decoded, but ${problems.map((p) => p.message).join('; ')}`, problems);
    return res.body as T;
  }

  /** A call without a result (deletes): only the status counts. */
  async noResult(method: 'PATCH' | 'DELETE' | 'POST', path: string, body?: unknown): Promise<void> {
    this.check(await this.raw(method, path, body));
  }

  /** GetPaged + MarshalPagedResultContent[T]. */
  async paged<T = Record<string, unknown>>(path: string, item: GoType): Promise<{ content: T[]; totalElements: number }> {
    const content: T[] = [];
    let total = 0;
    for (let page = 0; ; page++) {
      const url = `${path}${path.includes('?') ? '&' : '?'}page=${page}`;
      const result = await this.result<{ content: unknown[]; last: boolean; totalElements: number }>('GET', url, PagedResult);
      const problems = decodeProblems(slice(item), result.content, '$.content');
      const errors = problems.filter((p) => p.kind !== 'missing');
      if (errors.length) throw new ClientCallError(errors[0].message, problems);
      if (problems.length) throw new ClientCallError(`decoded, but ${problems.map((p) => p.message).join('; ')}`, problems);
      content.push(...(result.content as T[]));
      total = result.totalElements;
      if (result.last) break;
      if (page > MAX_PAGING_LOOPS) throw new ClientCallError('exceeded maximum paging loops');
    }
    return { content, totalElements: total };
  }
}
