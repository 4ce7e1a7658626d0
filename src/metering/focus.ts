/**
 * The FOCUS 1.1 mapping of statement lines (FinOps Open Cost and Usage Specification; docs/metering.md, "FOCUS
 * export"): one row per charge (statement line), the columns in the specification's order (alphabetical), values as
 * the specification's types write them: Decimal as a decimal string, DateTime as ISO 8601 in UTC, JSON as an object.
 */
export const FOCUS_VERSION = '1.1';
export const FOCUS_PROVIDER = 'Cluster Management Service';

export const FOCUS_COLUMNS = [
  'BilledCost',
  'BillingAccountId',
  'BillingAccountName',
  'BillingCurrency',
  'BillingPeriodEnd',
  'BillingPeriodStart',
  'ChargeCategory',
  'ChargeClass',
  'ChargeDescription',
  'ChargeFrequency',
  'ChargePeriodEnd',
  'ChargePeriodStart',
  'ConsumedQuantity',
  'ConsumedUnit',
  'ContractedCost',
  'ContractedUnitPrice',
  'EffectiveCost',
  'InvoiceIssuerName',
  'ListCost',
  'ListUnitPrice',
  'PricingCategory',
  'PricingQuantity',
  'PricingUnit',
  'ProviderName',
  'PublisherName',
  'RegionId',
  'RegionName',
  'ResourceId',
  'ResourceName',
  'ResourceType',
  'ServiceCategory',
  'ServiceName',
  'SkuId',
  'SkuPriceId',
  'SubAccountId',
  'SubAccountName',
  'Tags',
] as const;
export type FocusColumn = (typeof FOCUS_COLUMNS)[number];
export type FocusRow = Record<FocusColumn, string | Record<string, string> | null>;

/** SQL: a literal string. */
const text = (v: string): string => `'${v.replace(/'/g, "''")}'`;
/** SQL: an instant as Date.prototype.toISOString writes it (UTC, milliseconds, truncated). */
const iso = (e: string): string => `to_char(${e} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
/** SQL: a value as a JSON text (null for NULL), as JSON.stringify writes it. */
const json = (e: string): string => `COALESCE(to_json(${e})::text, 'null')`;

/**
 * The FOCUS columns of one line as SQL expressions over the export query's columns (a statement line plus its
 * organisation and period; docs/metering.md, "FOCUS export"): text, NULL for a null value; Tags is a JSON object's
 * text. `currency` is the price book's, for lines that have none (unpriced usage).
 */
export function focusColumnsSql(currency: string): Record<FocusColumn, string> {
  const nodes = `kind = 'NODES'`;
  const priced = `price_identity IS NOT NULL`;
  const unit = `CASE WHEN ${nodes} THEN 'Node-Hours' ELSE 'Hours' END`;
  const what =
    `CASE WHEN ${nodes} THEN node_type || ' nodes of node pool ' || node_pool_name || ' of cluster ' || cluster_name ` +
    `ELSE CASE WHEN highly_available THEN 'Highly available control plane' ELSE 'Control plane' END || ' of cluster ' || cluster_name END`;
  const sku =
    `CASE WHEN ${nodes} THEN 'node/' || cloud_provider || '/' || region || '/' || node_type ` +
    `ELSE 'control-plane/' || cloud_provider || '/' || region || '/' || CASE WHEN highly_available THEN 'ha' ELSE 'standard' END END`;
  const provider = text(FOCUS_PROVIDER);
  return {
    BilledCost: 'billed_cost::text',
    BillingAccountId: 'organisation_identity::text',
    BillingAccountName: 'organisation_name::text',
    BillingCurrency: `COALESCE(currency, ${text(currency)})`,
    BillingPeriodEnd: iso('period_end'),
    BillingPeriodStart: iso('period_start'),
    ChargeCategory: `'Usage'`,
    ChargeClass: 'charge_class',
    ChargeDescription: `${what} || ' in ' || cloud_provider || '/' || region || CASE WHEN charge_class IS NOT NULL THEN ' (correction)' ELSE '' END`,
    ChargeFrequency: `'Usage-Based'`,
    ChargePeriodEnd: iso('charge_period_end'),
    ChargePeriodStart: iso('charge_period_start'),
    ConsumedQuantity: 'quantity::text',
    ConsumedUnit: unit,
    ContractedCost: 'billed_cost::text',
    ContractedUnitPrice: `CASE WHEN ${priced} THEN unit_price::text END`,
    EffectiveCost: 'billed_cost::text',
    InvoiceIssuerName: provider,
    ListCost: 'list_cost::text',
    ListUnitPrice: `CASE WHEN ${priced} THEN list_unit_price::text END`,
    PricingCategory: `CASE WHEN ${priced} THEN 'Standard' ELSE 'Other' END`,
    PricingQuantity: 'quantity::text',
    PricingUnit: unit,
    ProviderName: provider,
    PublisherName: provider,
    RegionId: 'region',
    RegionName: 'COALESCE(region_name, region)',
    ResourceId: `CASE WHEN ${nodes} THEN node_pool_identity ELSE cluster_identity END::text`,
    ResourceName: `CASE WHEN ${nodes} THEN cluster_name || '/' || node_pool_name ELSE cluster_name END`,
    ResourceType: `CASE WHEN ${nodes} THEN 'Kubernetes Node Pool' ELSE 'Kubernetes Control Plane' END`,
    ServiceCategory: `'Compute'`,
    ServiceName: `'Kubernetes Clusters'`,
    SkuId: sku,
    SkuPriceId: `CASE WHEN ${priced} THEN price_identity::text END`,
    SubAccountId: `organisation_slug || '/' || environment_slug`,
    SubAccountName: 'environment_slug',
    Tags:
      `'{"cms/environment":' || ${json('environment_slug')} || ',"cms/cluster":' || ${json('cluster_slug')} || ` +
      `CASE WHEN ${nodes} THEN ',"cms/nodePool":' || ${json('node_pool_name')} ELSE '' END || '}'`,
  };
}

/**
 * SQL: one export line from the columns `focusColumnsSql` named (as the columns of relation `c`): an RFC 4180 CSV
 * record ending in CRLF, or a JSON object as JSON.stringify writes a FocusRow (the columns in order, Tags an object).
 * PostgreSQL writes the text, so the service handles one string per row, not forty values and the objects made of
 * them (ADR 0204).
 */
export function focusLineSql(format: 'csv' | 'json'): string {
  if (format === 'json') {
    return `'{' || ${FOCUS_COLUMNS.map((col) => `'${JSON.stringify(col)}:' || ${col === 'Tags' ? `c."${col}"` : json(`c."${col}"`)}`).join(" || ',' || ")} || '}'`;
  }
  const field = (e: string) => `CASE WHEN ${e} IS NULL THEN '' WHEN ${e} ~ E'[",\\r\\n]' THEN '"' || replace(${e}, '"', '""') || '"' ELSE ${e} END`;
  return `${FOCUS_COLUMNS.map((col) => field(`c."${col}"`)).join(" || ',' || ")} || E'\\r\\n'`;
}

const csvField = (v: FocusRow[FocusColumn]): string => {
  if (v === null) return '';
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

export const csvHeader = (): string => `${FOCUS_COLUMNS.join(',')}\r\n`;
/** A CSV record (the OpenAPI example's; the export's are written by focusLineSql). */
export const csvLine = (row: FocusRow): string => `${FOCUS_COLUMNS.map((c) => csvField(row[c])).join(',')}\r\n`;

/** How each column is written (FOCUS data types): for the OpenAPI document. */
const DECIMALS: FocusColumn[] = ['BilledCost', 'ConsumedQuantity', 'ContractedCost', 'ContractedUnitPrice', 'EffectiveCost', 'ListCost', 'ListUnitPrice', 'PricingQuantity'];
const DATETIMES: FocusColumn[] = ['BillingPeriodEnd', 'BillingPeriodStart', 'ChargePeriodEnd', 'ChargePeriodStart'];
const NULLABLE: FocusColumn[] = ['ChargeClass', 'ContractedUnitPrice', 'ListUnitPrice', 'SkuPriceId'];

const EXAMPLE: FocusRow = {
  BilledCost: '76.68',
  BillingAccountId: '0b6f3c1e-2a4d-4e8f-9a7b-5c3d2e1f0a9b',
  BillingAccountName: 'Demo',
  BillingCurrency: 'EUR',
  BillingPeriodEnd: '2026-12-01T00:00:00.000Z',
  BillingPeriodStart: '2026-11-01T00:00:00.000Z',
  ChargeCategory: 'Usage',
  ChargeClass: null,
  ChargeDescription: 'm5.large nodes of node pool workers of cluster web in platform_1/eu-central-1',
  ChargeFrequency: 'Usage-Based',
  ChargePeriodEnd: '2026-12-01T00:00:00.000Z',
  ChargePeriodStart: '2026-11-01T00:00:00.000Z',
  ConsumedQuantity: '852.000000',
  ConsumedUnit: 'Node-Hours',
  ContractedCost: '76.68',
  ContractedUnitPrice: '0.09',
  EffectiveCost: '76.68',
  InvoiceIssuerName: FOCUS_PROVIDER,
  ListCost: '81.79',
  ListUnitPrice: '0.096',
  PricingCategory: 'Standard',
  PricingQuantity: '852.000000',
  PricingUnit: 'Node-Hours',
  ProviderName: FOCUS_PROVIDER,
  PublisherName: FOCUS_PROVIDER,
  RegionId: 'eu-central-1',
  RegionName: 'Frankfurt (EU Central 1)',
  ResourceId: 'a9d3c2b1-7e6f-4a5b-9c8d-1e2f3a4b5c6d',
  ResourceName: 'web/workers',
  ResourceType: 'Kubernetes Node Pool',
  ServiceCategory: 'Compute',
  ServiceName: 'Kubernetes Clusters',
  SkuId: 'node/platform_1/eu-central-1/m5.large',
  SkuPriceId: '6f1c7a2e-4b0d-4f7e-9d3a-2c5b8e1f0a47',
  SubAccountId: 'demo/production',
  SubAccountName: 'production',
  Tags: { 'cms/environment': 'production', 'cms/cluster': 'web', 'cms/nodePool': 'workers' },
};

/** The response content of an export operation: FOCUS CSV or a JSON array of FOCUS rows. */
export function focusResponseContent(): Record<string, unknown> {
  const properties = Object.fromEntries(
    FOCUS_COLUMNS.map((c) => [
      c,
      c === 'Tags'
        ? { type: 'object', additionalProperties: { type: 'string' } }
        : {
            type: 'string',
            ...(DATETIMES.includes(c) ? { format: 'date-time' } : {}),
            ...(DECIMALS.includes(c) ? { pattern: '^-?[0-9]+(\\.[0-9]+)?$' } : {}),
            ...(NULLABLE.includes(c) ? { nullable: true } : {}),
          },
    ]),
  );
  return {
    'text/csv': { schema: { type: 'string' }, example: csvHeader() + csvLine(EXAMPLE) },
    'application/json': {
      schema: { type: 'array', items: { type: 'object', required: [...FOCUS_COLUMNS], properties } },
      example: [EXAMPLE],
    },
  };
}
