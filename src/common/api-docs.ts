import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorBodyDto } from './errors';

interface ErrorDocOptions {
  badRequest?: boolean;
  forbidden?: boolean;
  notFound?: boolean;
  conflict?: boolean | string;
}

/** Documents the error answers every operation may give, all with the one error body. */
export function ApiStandardErrors(opts: ErrorDocOptions = {}) {
  const decorators = [
    ApiResponse({ status: 401, description: 'Missing, unknown, revoked or expired credential', type: ErrorBodyDto }),
    ApiResponse({ status: 429, description: 'Rate limited; see Retry-After', type: ErrorBodyDto }),
    ApiResponse({ status: 500, description: 'Internal server error', type: ErrorBodyDto }),
    ApiResponse({ status: 503, description: 'Database unreachable', type: ErrorBodyDto }),
  ];
  if (opts.badRequest !== false)
    decorators.push(ApiResponse({ status: 400, description: 'Invalid request; `errors` names each field', type: ErrorBodyDto }));
  if (opts.forbidden !== false)
    decorators.push(
      ApiResponse({ status: 403, description: 'Not a member of the organisation, or the role does not allow it', type: ErrorBodyDto }),
    );
  if (opts.notFound !== false) decorators.push(ApiResponse({ status: 404, description: 'Resource not found', type: ErrorBodyDto }));
  if (opts.conflict)
    decorators.push(
      ApiResponse({
        status: 409,
        description: typeof opts.conflict === 'string' ? opts.conflict : 'Refused by a guard or the current state',
        type: ErrorBodyDto,
      }),
    );
  return applyDecorators(...decorators);
}
