import { applyDecorators, Type } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsArray, IsInt, IsOptional, IsString, Matches, Min } from 'class-validator';
import { ValidationFailedException } from './errors';

export const MAX_PAGE_SIZE = 500;
export const DEFAULT_PAGE_SIZE = 50;

const toArray = ({ value }: { value: unknown }) =>
  value === undefined ? undefined : Array.isArray(value) ? value : [value];
const toIntOrRaw = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;

/** Spring Data paging query: ?page=0&size=50&sort=prop,asc (sort repeatable). */
export class PageQueryDto {
  @ApiPropertyOptional({ description: 'Zero-based page index', minimum: 0, default: 0, type: 'integer' })
  @IsOptional() @Transform(toIntOrRaw) @IsInt() @Min(0)
  page?: number;

  @ApiPropertyOptional({
    description: `Page size; values above ${MAX_PAGE_SIZE} are clamped to ${MAX_PAGE_SIZE}`,
    minimum: 1,
    default: DEFAULT_PAGE_SIZE,
    type: 'integer',
  })
  @IsOptional() @Transform(toIntOrRaw) @IsInt() @Min(1)
  size?: number;

  @ApiPropertyOptional({
    description: 'Sorting: property,(asc|desc). Repeatable. Unknown properties are refused with 400.',
    type: [String],
    example: ['createdAt,desc'],
  })
  @IsOptional() @Transform(toArray) @IsArray() @IsString({ each: true })
  @Matches(/^[A-Za-z][A-Za-z0-9_.]*(,(asc|desc|ASC|DESC))?$/, { each: true, message: 'sort must look like property,asc or property,desc' })
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
    const [property, dir] = raw.split(',');
    if (!(property in sortable)) {
      throw ValidationFailedException.forField(
        'sort',
        `sort property '${property}' is unknown; use one of: ${Object.keys(sortable).join(', ')}`,
      );
    }
    sort.push({ property, direction: (dir ?? 'asc').toUpperCase() === 'DESC' ? 'DESC' : 'ASC' });
  }
  return { page, size, offset: page * size, sort: sort.length ? sort : defaultSort };
}

/** ORDER BY clause entries for a query builder, with a stable tiebreaker. */
export function orderByEntries(req: PageRequest, sortable: Record<string, string>, tiebreaker: string): [string, 'ASC' | 'DESC'][] {
  const entries: [string, 'ASC' | 'DESC'][] = req.sort.map((s) => [sortable[s.property], s.direction]);
  if (!entries.some(([expr]) => expr === tiebreaker)) entries.push([tiebreaker, 'ASC']);
  return entries;
}

// ---- OpenAPI schemas for the envelopes --------------------------------------------------------

export class SortFormADto {
  @ApiProperty() empty: boolean;
  @ApiProperty() sorted: boolean;
  @ApiProperty() unsorted: boolean;
}

export class SortObjectDto {
  @ApiProperty() ascending: boolean;
  @ApiProperty({ enum: ['ASC', 'DESC'] }) direction: string;
  @ApiProperty() ignoreCase: boolean;
  @ApiProperty({ example: 'NATIVE' }) nullHandling: string;
  @ApiProperty() property: string;
}

class PageableBase {
  @ApiProperty({ type: 'integer', format: 'int64' }) offset: number;
  @ApiProperty({ type: 'integer', format: 'int32' }) pageNumber: number;
  @ApiProperty({ type: 'integer', format: 'int32' }) pageSize: number;
  @ApiProperty() paged: boolean;
  @ApiProperty() unpaged: boolean;
}
export class PageableFormADto extends PageableBase {
  @ApiProperty({ type: SortFormADto }) sort: SortFormADto;
}
export class PageableFormBDto extends PageableBase {
  @ApiProperty({ type: [SortObjectDto] }) sort: SortObjectDto[];
}

class PageBase {
  @ApiProperty() empty: boolean;
  @ApiProperty() first: boolean;
  @ApiProperty() last: boolean;
  @ApiProperty({ type: 'integer', format: 'int32' }) number: number;
  @ApiProperty({ type: 'integer', format: 'int32' }) numberOfElements: number;
  @ApiProperty({ type: 'integer', format: 'int32' }) size: number;
  @ApiProperty({ type: 'integer', format: 'int64' }) totalElements: number;
  @ApiProperty({ type: 'integer', format: 'int32' }) totalPages: number;
}
export class PageFormADto extends PageBase {
  @ApiProperty({ type: PageableFormADto }) pageable: PageableFormADto;
  @ApiProperty({ type: SortFormADto }) sort: SortFormADto;
}
export class PageFormBDto extends PageBase {
  @ApiProperty({ type: PageableFormBDto }) pageable: PageableFormBDto;
  @ApiProperty({ type: [SortObjectDto] }) sort: SortObjectDto[];
}

/** Documents a 200 answering a page (form A or B) of `model`. */
export function ApiPageResponse(model: Type<unknown>, form: SortForm, description?: string) {
  const envelope = form === 'A' ? PageFormADto : PageFormBDto;
  return applyDecorators(
    ApiExtraModels(envelope, model),
    ApiOkResponse({
      description: description ?? `Page (form ${form}) of ${model.name}`,
      schema: {
        allOf: [
          { $ref: getSchemaPath(envelope) },
          { properties: { content: { type: 'array', items: { $ref: getSchemaPath(model) } } } },
        ],
      },
    }),
  );
}
