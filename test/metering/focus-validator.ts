import * as fs from 'fs';
import * as path from 'path';

/**
 * Checks a FOCUS export against the column requirements of test/fixtures/focus-1.1-columns.json (derived from the
 * FOCUS 1.1 specification's column definitions): names, types, nullability, allowed values, and the cross-column
 * rules the fixture lists. Returns the violations (empty: the export conforms).
 */
interface ColumnRequirement {
  column: string;
  featureLevel: 'Mandatory' | 'Conditional' | 'Recommended';
  allowsNulls: boolean;
  dataType: 'String' | 'Decimal' | 'DateTime' | 'JSON';
  allowedValues?: string[];
}

const FIXTURE: { columns: ColumnRequirement[] } = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../fixtures/focus-1.1-columns.json'), 'utf8'));
const DECIMAL = /^-?[0-9]+(\.[0-9]+)?$/;
const DATETIME = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$/;
const CURRENCY = /^[A-Z]{3}$/;

export type FocusValue = string | Record<string, unknown> | null;

/** RFC 4180 CSV into rows of named values (an empty field is null; Tags is parsed as JSON). */
export function parseFocusCsv(text: string): { columns: string[]; rows: Record<string, FocusValue>[] } {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      record.push(field);
      field = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i++;
    } else field += ch;
  }
  if (field !== '' || record.length) {
    record.push(field);
    records.push(record);
  }
  const [columns, ...data] = records;
  const rows = data.map((values) =>
    Object.fromEntries(
      columns.map((c, i) => {
        const v = values[i] ?? '';
        if (v === '') return [c, null];
        if (c === 'Tags') {
          try {
            return [c, JSON.parse(v)];
          } catch {
            return [c, v];
          }
        }
        return [c, v];
      }),
    ),
  );
  return { columns, rows };
}

export function validateFocus(columns: string[], rows: Record<string, FocusValue>[]): string[] {
  const out: string[] = [];
  const known = new Map(FIXTURE.columns.map((c) => [c.column, c]));
  for (const c of FIXTURE.columns) {
    if (c.featureLevel === 'Mandatory' && !columns.includes(c.column)) out.push(`column ${c.column} (Mandatory) is missing`);
  }
  for (const c of columns) if (!known.has(c) && !c.startsWith('x_')) out.push(`column ${c} is not a FOCUS column (custom columns start with x_)`);
  rows.forEach((row, i) => {
    const at = `row ${i + 1}`;
    for (const c of columns) {
      const req = known.get(c);
      if (!req) continue;
      const v = row[c] ?? null;
      if (v === null) {
        if (!req.allowsNulls) out.push(`${at}: ${c} is null`);
        continue;
      }
      if (req.dataType === 'JSON') {
        if (typeof v !== 'object' || Array.isArray(v)) out.push(`${at}: ${c} is not a JSON object`);
        continue;
      }
      if (typeof v !== 'string') {
        out.push(`${at}: ${c} is not a ${req.dataType} value`);
        continue;
      }
      if (req.dataType === 'Decimal' && !DECIMAL.test(v)) out.push(`${at}: ${c} '${v}' is not a decimal`);
      if (req.dataType === 'DateTime' && !DATETIME.test(v)) out.push(`${at}: ${c} '${v}' is not an ISO 8601 date-time in UTC`);
      if (req.allowedValues && !req.allowedValues.includes(v)) out.push(`${at}: ${c} '${v}' is not one of ${req.allowedValues.join(', ')}`);
    }
    // Cross-column rules of the specification.
    const correction = row.ChargeClass === 'Correction';
    if (row.ChargeCategory === 'Usage' && !correction) {
      for (const c of ['PricingCategory', 'PricingQuantity', 'PricingUnit', 'ConsumedQuantity', 'ConsumedUnit']) {
        if (row[c] == null) out.push(`${at}: ${c} must not be null for a Usage charge that is not a correction`);
      }
    }
    if (typeof row.BillingCurrency === 'string' && !CURRENCY.test(row.BillingCurrency)) out.push(`${at}: BillingCurrency is not an ISO 4217 code`);
    const t = (c: string) => (typeof row[c] === 'string' && DATETIME.test(row[c] as string) ? Date.parse(row[c] as string) : NaN);
    if (!(t('ChargePeriodStart') < t('ChargePeriodEnd'))) out.push(`${at}: ChargePeriodStart is not before ChargePeriodEnd`);
    if (!(t('BillingPeriodStart') <= t('ChargePeriodStart') && t('ChargePeriodEnd') <= t('BillingPeriodEnd'))) {
      out.push(`${at}: the charge period is not within the billing period`);
    }
    if (!correction) {
      for (const [price, cost] of [
        ['ListUnitPrice', 'ListCost'],
        ['ContractedUnitPrice', 'ContractedCost'],
      ]) {
        if (typeof row[price] !== 'string' || typeof row.PricingQuantity !== 'string' || typeof row[cost] !== 'string') continue;
        // Exact decimal arithmetic in integers (micro-units), never floating point.
        const micro = (s: string, places: number) => {
          const [i, f = ''] = s.split('.');
          return BigInt(i) * 10n ** BigInt(places) + BigInt((f + '0'.repeat(places)).slice(0, places) || '0') * (s.startsWith('-') ? -1n : 1n);
        };
        const product = micro(row[price] as string, 10) * micro(row.PricingQuantity as string, 6); // 16 places
        const costAt16 = micro(row[cost] as string, 2) * 10n ** 14n;
        const diff = product > costAt16 ? product - costAt16 : costAt16 - product;
        if (diff > 5n * 10n ** 13n) out.push(`${at}: PricingQuantity x ${price} does not match ${cost} (to half a cent)`);
      }
    }
  });
  return out;
}
