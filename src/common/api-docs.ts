import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiSchema } from '@nestjs/swagger';
import { ErrorBodyDto } from './errors';

/**
 * How an operation is documented, on its handler:
 *
 *   @Get(':slug') @RequireOrgRole('MEMBER')
 *   @ApiDoc({ summary: 'Read one widget', description: 'One widget by slug, with ...', errors: '404 when no widget has this slug.' })
 *   @ApiOkResponse({ type: WidgetResponse }) @ApiStandardErrors()
 *
 * Write what only a person knows: what the operation does, what it answers, its own error cases. What the code
 * declares is added to the document from the route (src/common/route-docs.ts), after `description` and before
 * `errors`: the paging sentence (@ApiPageResponse), who may call it (@Public, @PlatformAdminOnly,
 * @RequireOrgRole), the READ_ONLY token rule for operations that are not reads, and the 401/403 answers.
 * test/common/operation-docs.e2e-spec.ts fails when written text contradicts those declarations.
 */
export interface OperationDoc {
  /** One line, shown in the list of operations. */
  summary: string;
  /** What the operation does and answers, in sentences; not who may call it, nor paging. */
  description?: string;
  /** The operation's own error cases, written after the generated sentences (e.g. '404 when the cluster does not exist.'). */
  errors?: string;
  /**
   * Who may call it, only on a route without a role guard whose service checks more than authentication; it
   * replaces the generated "Any authenticated user may call it" (the test refuses it on a guarded route). Such an
   * operation declares its own 403 answer too.
   */
  access?: string;
}

/** Metadata key of the OperationDoc on a handler. */
export const OPERATION_DOC = 'api:operation-doc';

/** Documents an operation: @ApiOperation with the written text, plus what route-docs.ts composes around it. */
export function ApiDoc(doc: OperationDoc) {
  return applyDecorators(
    ApiOperation({ summary: doc.summary, ...(doc.description ? { description: doc.description } : {}) }),
    SetMetadata(OPERATION_DOC, doc),
  );
}

interface ErrorDocOptions {
  badRequest?: boolean;
  notFound?: boolean;
  conflict?: boolean | string;
  /** The operation's own 429 (besides the request rate limits), e.g. a per-resource limit. */
  tooManyRequests?: string;
}

/**
 * Documents the error answers an operation may give besides those of its guards, all with the one error body.
 * 401 and 403 come from the guards (route-docs.ts): an operation does not state them.
 */
export function ApiStandardErrors(opts: ErrorDocOptions = {}) {
  const decorators = [
    ApiResponse({ status: 429, description: opts.tooManyRequests ? `${opts.tooManyRequests}, or rate limited; see Retry-After` : 'Rate limited; see Retry-After', type: ErrorBodyDto }),
    ApiResponse({ status: 500, description: 'Internal server error', type: ErrorBodyDto }),
    ApiResponse({ status: 503, description: 'The database cannot be used now (connection lost or refused, read-only during a failover, no answer in time); the message names the cause, Retry-After says when to retry', type: ErrorBodyDto }),
  ];
  if (opts.badRequest !== false)
    decorators.push(ApiResponse({ status: 400, description: 'Invalid request; `errors` names each field', type: ErrorBodyDto }));
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

/** The sentence a partial update's schema carries (test/common/optional-request-fields.spec.ts reads it). */
export const PARTIAL_UPDATE = 'A field left out keeps its current value.';

/** Documents a PATCH body whose fields are all optional: each one left out keeps its current value. */
export function ApiPartialUpdate(more?: string) {
  return ApiSchema({ description: more ? `${PARTIAL_UPDATE} ${more}` : PARTIAL_UPDATE });
}
