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

/** The row of one line (the export query's columns: a statement line plus its organisation and period). */
export function focusRow(r: Record<string, any>, currency: string): FocusRow {
  const nodes = r.kind === 'NODES';
  const unit = nodes ? 'Node-Hours' : 'Hours';
  const priced = r.price_identity != null;
  const what = nodes
    ? `${r.node_type} nodes of node pool ${r.node_pool_name} of cluster ${r.cluster_name}`
    : `${r.highly_available ? 'Highly available control plane' : 'Control plane'} of cluster ${r.cluster_name}`;
  const sku = nodes ? `node/${r.cloud_provider}/${r.region}/${r.node_type}` : `control-plane/${r.cloud_provider}/${r.region}/${r.highly_available ? 'ha' : 'standard'}`;
  const tags: Record<string, string> = { 'cms/environment': r.environment_slug, 'cms/cluster': r.cluster_slug };
  if (nodes) tags['cms/nodePool'] = r.node_pool_name;
  return {
    BilledCost: r.billed_cost,
    BillingAccountId: r.organisation_identity,
    BillingAccountName: r.organisation_name,
    BillingCurrency: r.currency ?? currency,
    BillingPeriodEnd: r.period_end.toISOString(),
    BillingPeriodStart: r.period_start.toISOString(),
    ChargeCategory: 'Usage',
    ChargeClass: r.charge_class ?? null,
    ChargeDescription: `${what} in ${r.cloud_provider}/${r.region}${r.charge_class ? ' (correction)' : ''}`,
    ChargeFrequency: 'Usage-Based',
    ChargePeriodEnd: r.charge_period_end.toISOString(),
    ChargePeriodStart: r.charge_period_start.toISOString(),
    ConsumedQuantity: r.quantity,
    ConsumedUnit: unit,
    ContractedCost: r.billed_cost,
    ContractedUnitPrice: priced ? r.unit_price : null,
    EffectiveCost: r.billed_cost,
    InvoiceIssuerName: FOCUS_PROVIDER,
    ListCost: r.list_cost,
    ListUnitPrice: priced ? r.list_unit_price : null,
    PricingCategory: priced ? 'Standard' : 'Other',
    PricingQuantity: r.quantity,
    PricingUnit: unit,
    ProviderName: FOCUS_PROVIDER,
    PublisherName: FOCUS_PROVIDER,
    RegionId: r.region,
    RegionName: r.region_name ?? r.region,
    ResourceId: nodes ? r.node_pool_identity : r.cluster_identity,
    ResourceName: nodes ? `${r.cluster_name}/${r.node_pool_name}` : r.cluster_name,
    ResourceType: nodes ? 'Kubernetes Node Pool' : 'Kubernetes Control Plane',
    ServiceCategory: 'Compute',
    ServiceName: 'Kubernetes Clusters',
    SkuId: sku,
    SkuPriceId: priced ? r.price_identity : null,
    SubAccountId: `${r.organisation_slug}/${r.environment_slug}`,
    SubAccountName: r.environment_slug,
    Tags: tags,
  };
}

const csvField = (v: FocusRow[FocusColumn]): string => {
  if (v === null) return '';
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

export const csvHeader = (): string => `${FOCUS_COLUMNS.join(',')}\r\n`;
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
