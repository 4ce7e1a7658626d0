/** A parameter of the OpenAPI document, as much of it as Swagger UI's pre-filling reads. */
export interface OpenApiParameter {
  name: string;
  in: string;
  required?: boolean;
  example?: unknown;
  schema?: { example?: unknown; default?: unknown; format?: string };
}

/** What Swagger UI pre-fills for a parameter: its example, else its schema's example, else its default. */
export const prefill = (p: OpenApiParameter): unknown => p.example ?? p.schema?.example ?? p.schema?.default;

/** The URL Swagger UI's Try it out sends for `template` with nothing but the pre-filled values. */
export function prefilledUrl(template: string, params: OpenApiParameter[]): string {
  let url = template;
  for (const p of params.filter((x) => x.in === 'path')) url = url.replace(`{${p.name}}`, encodeURIComponent(String(prefill(p))));
  const query = params
    .filter((p) => p.in === 'query' && prefill(p) !== undefined)
    .flatMap((p) => {
      const v = prefill(p);
      return (Array.isArray(v) ? v : [v]).map((x) => `${encodeURIComponent(p.name)}=${encodeURIComponent(String(x))}`);
    });
  return query.length ? `${url}?${query.join('&')}` : url;
}
