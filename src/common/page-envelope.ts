/**
 * The spec's page envelope (Spring Data shape), free of framework imports so that the benchmark
 * baseline answers with exactly the same JSON.
 */
export interface SortOrder {
  property: string;
  direction: 'ASC' | 'DESC';
  /** `sort=prop,asc,ignorecase`: text compared case-insensitively. */
  ignoreCase?: boolean;
}

export interface PageRequest {
  page: number;
  size: number;
  offset: number;
  sort: SortOrder[];
}

export type SortForm = 'A' | 'B';

export interface SortFormA {
  empty: boolean;
  sorted: boolean;
  unsorted: boolean;
}
export interface SortObject {
  ascending: boolean;
  direction: 'ASC' | 'DESC';
  ignoreCase: boolean;
  nullHandling: string;
  property: string;
}

export interface Page<T> {
  content: T[];
  empty: boolean;
  first: boolean;
  last: boolean;
  number: number;
  numberOfElements: number;
  pageable: {
    offset: number;
    pageNumber: number;
    pageSize: number;
    paged: boolean;
    sort: SortFormA | SortObject[];
    unpaged: boolean;
  };
  size: number;
  sort: SortFormA | SortObject[];
  totalElements: number;
  totalPages: number;
}

function sortIn(form: SortForm, sort: SortOrder[]): SortFormA | SortObject[] {
  if (form === 'A') return { empty: sort.length === 0, sorted: sort.length > 0, unsorted: sort.length === 0 };
  return sort.map((s) => ({
    ascending: s.direction === 'ASC',
    direction: s.direction,
    ignoreCase: s.ignoreCase === true,
    nullHandling: 'NATIVE',
    property: s.property,
  }));
}

/** The spec's page envelope, with sort in form A (object) or form B (array). */
export function toPage<T>(content: T[], totalElements: number, req: PageRequest, form: SortForm): Page<T> {
  const totalPages = req.size > 0 ? Math.ceil(totalElements / req.size) : 0;
  const sort = sortIn(form, req.sort);
  return {
    content,
    empty: content.length === 0,
    first: req.page === 0,
    last: req.page >= totalPages - 1,
    number: req.page,
    numberOfElements: content.length,
    pageable: {
      offset: req.offset,
      pageNumber: req.page,
      pageSize: req.size,
      paged: true,
      sort,
      unpaged: false,
    },
    size: req.size,
    sort,
    totalElements,
    totalPages,
  };
}

