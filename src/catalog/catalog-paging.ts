import { Page, PageQueryDto, SortForm, SortOrder, toPage, toPageRequest } from '../common/paging';

/** How a catalog list may be sorted: API property -> value to compare. */
export type InMemorySortable<T> = Record<string, (row: T) => string | number | boolean>;

function compare(a: string | number | boolean, b: string | number | boolean, ignoreCase: boolean): number {
  if (typeof a === 'string' && typeof b === 'string') {
    return ignoreCase ? a.localeCompare(b, undefined, { sensitivity: 'accent' }) : a.localeCompare(b);
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Pages a catalog list in memory. Catalog tables hold tens of rows, so sorting and slicing in the
 * process keeps the rules (e.g. the provider type order) in one place. Unknown sort properties are 400.
 */
export function pageInMemory<T, R>(
  rows: T[],
  query: PageQueryDto | undefined,
  sortable: InMemorySortable<T>,
  defaultSort: SortOrder[],
  form: SortForm,
  map: (row: T) => R,
): Page<R> {
  const names = Object.fromEntries(Object.keys(sortable).map((k) => [k, k]));
  const req = toPageRequest(query, names, defaultSort);
  const sorted = rows
    .map((row, index) => ({ row, index }))
    .sort((x, y) => {
      for (const s of req.sort) {
        const c = compare(sortable[s.property](x.row), sortable[s.property](y.row), s.ignoreCase === true);
        if (c !== 0) return s.direction === 'ASC' ? c : -c;
      }
      return x.index - y.index;
    })
    .map((e) => e.row);
  return toPage(sorted.slice(req.offset, req.offset + req.size).map(map), rows.length, req, form);
}
