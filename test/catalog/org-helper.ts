import type { TestApp, TestUser } from '../support/test-app';

export type Role = 'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER';

export interface TestOrg {
  id: number;
  slug: string;
}

/**
 * Creates an organisation by SQL (the organisations module is built in parallel) and makes each
 * given user a member with the given role.
 */
export async function createOrg(
  t: TestApp,
  slug: string,
  members: [TestUser, Role][],
  opts: { restricted?: boolean } = {},
): Promise<TestOrg> {
  const org = await t.insertOrganisation(slug, members.map(([user, role]) => ({ user, role })), { restricted: opts.restricted });
  return { id: org.id, slug };
}

export const FORM_A_SORT = { empty: expect.any(Boolean), sorted: expect.any(Boolean), unsorted: expect.any(Boolean) };

/** Asserts the spec's page envelope with sort in form A (object) or B (array). */
export function expectPage(body: Record<string, unknown>, form: 'A' | 'B'): void {
  expect(Object.keys(body).sort()).toEqual(
    ['content', 'empty', 'first', 'last', 'number', 'numberOfElements', 'pageable', 'size', 'sort', 'totalElements', 'totalPages'].sort(),
  );
  const pageable = body.pageable as Record<string, unknown>;
  expect(Object.keys(pageable).sort()).toEqual(['offset', 'pageNumber', 'pageSize', 'paged', 'sort', 'unpaged']);
  if (form === 'A') {
    expect(Array.isArray(body.sort)).toBe(false);
    expect(body.sort).toEqual(FORM_A_SORT);
    expect(pageable.sort).toEqual(FORM_A_SORT);
  } else {
    expect(Array.isArray(body.sort)).toBe(true);
    expect(Array.isArray(pageable.sort)).toBe(true);
  }
}
