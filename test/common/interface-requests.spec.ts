import * as fs from 'fs';
import * as path from 'path';

/**
 * Requests as the interface writes them: for every request body of the interface (test/fixtures/interface-requests.json,
 * written from its request tables), the committed document (docs/openapi.json) describes every field the interface
 * lists, and its `required` list is exactly the interface's Required marks. Where the interface leaves a field optional
 * the document does too; the service then supplies a documented default, or answers 400 naming the field where no
 * default can make sense (docs/conventions.md, "Optional request fields"). A difference is allowed only when the
 * fixture's `exceptions` list it with its reason.
 */
type Fixture = {
  requests: Record<string, { interface: string; fields: string[]; required: string[] }>;
  exceptions: { schema: string; field: string; documentRequired: boolean; reason: string }[];
};
type Schema = { properties?: Record<string, unknown>; required?: string[] };

const fixture = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../fixtures/interface-requests.json'), 'utf8')) as Fixture;
const doc = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../docs/openapi.json'), 'utf8')) as {
  components: { schemas: Record<string, Schema> };
};

describe("request schemas follow the interface's Required marks", () => {
  it('describes every request field the interface lists', () => {
    const missing: string[] = [];
    for (const [name, req] of Object.entries(fixture.requests)) {
      const schema = doc.components.schemas[name];
      if (!schema) {
        missing.push(`${name} (${req.interface}): no such schema`);
        continue;
      }
      for (const field of req.fields) if (!schema.properties?.[field]) missing.push(`${name}.${field} (${req.interface})`);
      for (const field of req.required) if (!req.fields.includes(field)) missing.push(`${name}.${field}: required but not a listed field`);
    }
    expect(missing).toEqual([]);
  });

  it('requires exactly what the interface marks Required, apart from the listed exceptions', () => {
    const differences: string[] = [];
    for (const [name, req] of Object.entries(fixture.requests)) {
      const documented = new Set(doc.components.schemas[name]?.required ?? []);
      const marked = new Set(req.required);
      for (const field of new Set([...documented, ...marked])) {
        if (documented.has(field) === marked.has(field)) continue;
        const excused = fixture.exceptions.some((e) => e.schema === name && e.field === field && e.documentRequired === documented.has(field));
        if (!excused) {
          differences.push(`${name}.${field}: the document ${documented.has(field) ? 'requires it' : 'leaves it optional'}, the interface ${marked.has(field) ? 'marks it Required' : 'does not mark it Required'}`);
        }
      }
    }
    expect(differences).toEqual([]);
  });

  it('lists only exceptions that are still differences, each with a reason', () => {
    for (const e of fixture.exceptions) {
      expect(e.reason.length).toBeGreaterThan(20);
      const documented = (doc.components.schemas[e.schema]?.required ?? []).includes(e.field);
      expect({ exception: `${e.schema}.${e.field}`, documented }).toEqual({ exception: `${e.schema}.${e.field}`, documented: e.documentRequired });
      expect(fixture.requests[e.schema].required.includes(e.field)).toBe(!e.documentRequired);
    }
  });
});
