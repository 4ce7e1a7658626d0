import { applyDecorators, SetMetadata, Type } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsInt, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { ValidationFailedException } from './errors';

export const MAX_PAGE_SIZE = 500;
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_INDEX = 2147483647;
/** The longest sort entry accepted: far more than any sortable property name with `,desc,ignorecase`. */
export const MAX_SORT_LENGTH = 100;

const toArray = ({ value }: { value: unknown }) =>
  value === undefined ? undefined : Array.isArray(value) ? value : [value];
/** Spring Data: a page that is negative or not a number is 0; a size below 1 or not a number is the default. */
const toPageIndex = ({ value }: { value: unknown }) => {
  const n = typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : NaN;
  // Spring Data reads the index as an int: one that does not fit means the default page too.
  return Number.isSafeInteger(n) && n >= 0 && n <= MAX_PAGE_INDEX ? n : undefined;
};
export const toPageSize = ({ value }: { value: unknown }) => {
  const n = typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : NaN;
  return Number.isSafeInteger(n) && n >= 1 ? n : Number.isFinite(n) && n > MAX_PAGE_SIZE ? MAX_PAGE_SIZE : undefined;
};

const SORT_PATTERN = /^[A-Za-z][A-Za-z0-9_.]*(,(asc|desc))?(,ignorecase)?$/i;

/** Spring Data paging query: ?page=0&size=50&sort=prop,asc[,ignorecase] (sort repeatable). */
export class PageQueryDto {
  @ApiPropertyOptional({
    description: 'Zero-based page index; negative, above 2147483647 or not a number means 0',
    minimum: 0,
    maximum: MAX_PAGE_INDEX,
    default: 0,
    type: 'integer',
    format: 'int32',
  })
  @IsOptional() @Transform(toPageIndex) @IsInt()
  page?: number;

  @ApiPropertyOptional({
    description: `Page size; values above ${MAX_PAGE_SIZE} are clamped to ${MAX_PAGE_SIZE}, below 1 or not a number mean the default`,
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    default: DEFAULT_PAGE_SIZE,
    type: 'integer',
    format: 'int32',
  })
  @IsOptional() @Transform(toPageSize) @IsInt()
  size?: number;

  @ApiPropertyOptional({
    description:
      'Sorting: property[,asc|desc][,ignorecase]. Repeatable. Each list names the properties it can sort by; others are refused with 400. ' +
        'Left out: the default order the list names.',
    type: 'array',
    items: { type: 'string', maxLength: MAX_SORT_LENGTH, pattern: SORT_PATTERN.source },
    maxItems: 10,
  })
  @IsOptional() @Transform(toArray) @IsArray() @ArrayMaxSize(10) @IsString({ each: true })
  @MaxLength(MAX_SORT_LENGTH, { each: true, message: `each sort entry must be at most ${MAX_SORT_LENGTH} characters` })
  @Matches(SORT_PATTERN, { each: true, message: 'sort must look like property,asc or property,desc[,ignorecase]' })
  sort?: string[];
}

export type { Page, PageRequest, SortForm, SortFormA, SortObject, SortOrder } from './page-envelope';
export { toPage } from './page-envelope';
import type { PageRequest, SortForm, SortOrder } from './page-envelope';

/**
 * Validates the query against the properties an endpoint can sort by.
 * `sortable` maps an API property name to the SQL expression that orders by it.
 */
export function toPageRequest(
  query: PageQueryDto | undefined,
  sortable: Record<string, string>,
  defaultSort: SortOrder[] = [],
): PageRequest {
  const page = query?.page ?? 0;
  const size = Math.min(query?.size ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
  const sort: SortOrder[] = [];
  for (const raw of query?.sort ?? []) {
    const [property, ...flags] = raw.split(',');
    // Own properties only: `constructor`, `toString`... of Object.prototype are not sort properties.
    if (!Object.prototype.hasOwnProperty.call(sortable, property)) {
      throw ValidationFailedException.forField(
        'sort',
        `sort property '${property}' is unknown; use one of: ${Object.keys(sortable).join(', ')}`,
      );
    }
    const lower = flags.map((f) => f.toLowerCase());
    sort.push({
      property,
      direction: lower.includes('desc') ? 'DESC' : 'ASC',
      ...(lower.includes('ignorecase') ? { ignoreCase: true } : {}),
    });
  }
  return { page, size, offset: page * size, sort: sort.length ? sort : defaultSort };
}

/**
 * ORDER BY entries for a page request, ending with a stable tiebreaker. With `ignorecase`, text values are
 * compared lower-cased first (the extra key is null for other types, which then keep their own order).
 */
export function orderByEntries(
  req: PageRequest,
  sortable: Record<string, string>,
  tiebreaker: string,
  tiebreakerDirection: 'ASC' | 'DESC' = 'ASC',
): [string, 'ASC' | 'DESC'][] {
  const entries: [string, 'ASC' | 'DESC'][] = req.sort.flatMap((s): [string, 'ASC' | 'DESC'][] => {
    const expr = sortable[s.property];
    if (!s.ignoreCase) return [[expr, s.direction]];
    const folded = `(CASE WHEN pg_typeof(${expr}) IN ('text'::regtype, 'character varying'::regtype) THEN lower((${expr})::text) END)`;
    return [[folded, s.direction], [expr, s.direction]];
  });
  if (!entries.some(([expr]) => expr === tiebreaker)) entries.push([tiebreaker, tiebreakerDirection]);
  return entries;
}

/** Applies the entries of `orderByEntries` to a TypeORM query builder. */
export function applyOrder(
  qb: { addOrderBy(sort: string, order: 'ASC' | 'DESC'): unknown },
  entries: [string, 'ASC' | 'DESC'][],
): void {
  for (const [expr, dir] of entries) qb.addOrderBy(expr, dir);
}

/** The same entries as one SQL ORDER BY list, for hand-written SQL. */
export function orderBySql(req: PageRequest, sortable: Record<string, string>, tiebreaker: string): string {
  return orderByEntries(req, sortable, tiebreaker)
    .map(([expr, dir]) => `${expr} ${dir}`)
    .join(', ');
}

// ---- OpenAPI schemas for the envelopes --------------------------------------------------------

export class SortFormADto {
  @ApiProperty({ example: false, description: 'No sort order was requested' }) empty: boolean;
  @ApiProperty({ example: true }) sorted: boolean;
  @ApiProperty({ example: false }) unsorted: boolean;
}

export class SortObjectDto {
  @ApiProperty({ example: true }) ascending: boolean;
  @ApiProperty({ enum: ['ASC', 'DESC'], example: 'ASC' }) direction: string;
  @ApiProperty({ example: false }) ignoreCase: boolean;
  @ApiProperty({ example: 'NATIVE' }) nullHandling: string;
  @ApiProperty({ example: 'name' }) property: string;
}

class PageableBase {
  @ApiProperty({ type: 'integer', format: 'int64', example: 0, description: 'Items before this page: pageNumber × pageSize' }) offset: number;
  @ApiProperty({ type: 'integer', format: 'int32', example: 0 }) pageNumber: number;
  @ApiProperty({ type: 'integer', format: 'int32', example: 50 }) pageSize: number;
  @ApiProperty({ example: true }) paged: boolean;
  @ApiProperty({ example: false }) unpaged: boolean;
}
export class PageableFormADto extends PageableBase {
  @ApiProperty({ type: SortFormADto }) sort: SortFormADto;
}
export class PageableFormBDto extends PageableBase {
  @ApiProperty({ type: [SortObjectDto] }) sort: SortObjectDto[];
}

class PageBase {
  @ApiProperty({ example: false, description: 'This page holds no items' }) empty: boolean;
  @ApiProperty({ example: true, description: 'This is the first page' }) first: boolean;
  @ApiProperty({ example: true, description: 'This is the last page' }) last: boolean;
  @ApiProperty({ type: 'integer', format: 'int32', example: 0, description: 'Index of this page (0-based)' }) number: number;
  @ApiProperty({ type: 'integer', format: 'int32', example: 2, description: 'Items on this page (the length of content)' }) numberOfElements: number;
  @ApiProperty({ type: 'integer', format: 'int32', example: 50, description: 'The page size asked for' }) size: number;
  @ApiProperty({ type: 'integer', format: 'int64', example: 2, description: 'Items on all pages' }) totalElements: number;
  @ApiProperty({ type: 'integer', format: 'int32', example: 1, description: 'Number of pages' }) totalPages: number;
}
export class PageFormADto extends PageBase {
  @ApiProperty({ type: PageableFormADto }) pageable: PageableFormADto;
  @ApiProperty({ type: SortFormADto }) sort: SortFormADto;
}
export class PageFormBDto extends PageBase {
  @ApiProperty({ type: PageableFormBDto }) pageable: PageableFormBDto;
  @ApiProperty({ type: [SortObjectDto] }) sort: SortObjectDto[];
}

/**
 * A list operation's paging declaration: the page form it answers and the properties it can sort by, i.e. the
 * keys of the sort allow-list its query passes to `toPageRequest`, in that order (the order its 400 names them).
 * The document's page schema and paging sentence are generated from it (src/common/route-docs.ts), and
 * test/common/operation-docs.e2e-spec.ts calls every declared list to check the declaration against what the
 * list answers: the page form, and the allow-list its 400 for an unknown sort property names.
 */
export interface PagingDoc {
  form: SortForm;
  sortable: readonly string[];
  /** The order without `sort`, in words, when it is worth saying (e.g. 'createdAt descending (newest first)'). */
  defaultOrder?: string;
}

/** Metadata key of the paging declaration on a handler. */
export const PAGING_DOC = 'api:paging';

/** "Page of clusters" from ClusterResponse: the item type in words, plural (the forms are explained in the document's introduction). */
export function pageDescription(model: Type<unknown>): string {
  const words = model.name
    .replace(/(Response|Dto)$/, '')
    .replace(/^Admin(?=[A-Z])/, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase();
  const plural = /s$/.test(words) ? words : /[^aeiou]y$/.test(words) ? `${words.slice(0, -1)}ies` : `${words}s`;
  return `Page of ${plural}`;
}

/**
 * Declares that the handler answers a page of `model` (see PagingDoc): the 200 response schema, and the
 * declaration the operation's description is generated from.
 */
export function ApiPageResponse(model: Type<unknown>, paging: PagingDoc, description?: string) {
  const envelope = paging.form === 'A' ? PageFormADto : PageFormBDto;
  return applyDecorators(
    SetMetadata(PAGING_DOC, paging),
    ApiExtraModels(envelope, model),
    ApiOkResponse({
      description: description ?? pageDescription(model),
      schema: {
        allOf: [
          { $ref: getSchemaPath(envelope) },
          { properties: { content: { type: 'array', maxItems: MAX_PAGE_SIZE, items: { $ref: getSchemaPath(model) } } } },
        ],
      },
    }),
  );
}
