/** The slug rule: lowercase, runs of other characters become '-', trimmed, at most 63 characters. */
export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/g, '');
}

/** The spec's Slug object. */
export interface SlugObject {
  slugValue: string;
}
export const slugObject = (value: string): SlugObject => ({ slugValue: value });

export interface EmailObject {
  email: string;
}
export const emailObject = (value: string | null | undefined): EmailObject | null =>
  value == null ? null : { email: value };
