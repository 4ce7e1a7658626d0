import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { auditDiff } from '../audit/audit-diff';
import { AuditRecorder } from '../audit/audit-recorder';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import { orderBySql, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import { newIdentity } from '../common/pinned-identities';
import { isUuid } from '../common/uuid';
import {
  CreatePriceBookEntryRequest,
  OrganisationTypePrices,
  PRICED_ORGANISATION_TYPES,
  PriceBookEntryResponse,
  UpdatePriceBookEntryRequest,
} from './dto/price-book.dto';

/** The properties the price-book list sorts by, in this order. */
export const PRICE_BOOK_SORTABLE = ['effectiveFrom', 'kind', 'cloudProvider', 'region', 'nodeType', 'createdAt'] as const;
const SORT_SQL: Record<(typeof PRICE_BOOK_SORTABLE)[number], string> = {
  effectiveFrom: 'p.effective_from',
  kind: 'p.kind',
  cloudProvider: 'p.cloud_provider',
  region: 'p.region',
  nodeType: 'p.node_type',
  createdAt: 'p.created_at',
};

const SELECT = `SELECT p.id, p.identity, p.kind, p.cloud_provider, p.region, p.node_type, p.highly_available, p.currency,
  trim_scale(p.list_price_per_hour)::text AS list_price, p.organisation_type_prices, p.effective_from, p.effective_to, p.valid_to,
  p.created_at, p.modified_at FROM price_book_periods p`;

interface Row {
  id: string;
  identity: string;
  kind: 'CONTROL_PLANE' | 'NODE';
  cloud_provider: string;
  region: string;
  node_type: string | null;
  highly_available: boolean | null;
  currency: string;
  list_price: string;
  organisation_type_prices: Record<string, string>;
  effective_from: Date;
  effective_to: Date | null;
  valid_to: Date | string;
  created_at: Date;
  modified_at: Date;
}

const fail = (field: string, message: string) => ValidationFailedException.forField(field, message);
/** Decimal strings as PostgreSQL's trim_scale writes them (no trailing zeros), so equal prices compare equal. */
const normalise = (price: string) => (price.includes('.') ? price.replace(/0+$/, '').replace(/\.$/, '') : price);

/**
 * The price book (issue 41, ADR 0201): platform administrators' prices per control plane (with or without high
 * availability) and per node type, per cloud provider and region, from an effective time on. A change never reaches
 * into the past: entries are created from now on, an entry that has begun accepts only an end (now or later), and only
 * entries that have not begun may be deleted.
 */
@Injectable()
export class PriceBookService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
  ) {}

  private get tx() {
    return this.txHost.tx;
  }

  async list(query: PageQueryDto): Promise<Page<PriceBookEntryResponse>> {
    const req = toPageRequest(query, SORT_SQL, [{ property: 'effectiveFrom', direction: 'DESC', ignoreCase: false }]);
    const rows: Row[] = await this.tx.query(`${SELECT} ORDER BY ${orderBySql(req, SORT_SQL, 'p.id')} LIMIT ${req.size} OFFSET ${req.offset}`);
    const [{ n }] = await this.tx.query(`SELECT count(*)::int AS n FROM price_book_entries`);
    const now = this.clock.now();
    return toPage(rows.map((r) => this.view(r, now)), n, req, 'A');
  }

  async get(identity: string): Promise<PriceBookEntryResponse> {
    return this.view(await this.find(identity), this.clock.now());
  }

  async create(req: CreatePriceBookEntryRequest): Promise<PriceBookEntryResponse> {
    const now = this.clock.now();
    if (req.kind === 'NODE') {
      if (req.nodeType == null) throw fail('nodeType', 'nodeType is required for a NODE price');
      if (req.highlyAvailable != null) throw fail('highlyAvailable', 'highlyAvailable is only for CONTROL_PLANE prices; leave it out for NODE');
    } else {
      if (req.highlyAvailable == null) throw fail('highlyAvailable', 'highlyAvailable is required for a CONTROL_PLANE price (true or false)');
      if (req.nodeType != null) throw fail('nodeType', 'nodeType is only for NODE prices; leave it out for CONTROL_PLANE');
    }
    await this.checkCatalog(req.cloudProvider, req.region, req.kind === 'NODE' ? req.nodeType! : null);
    await this.checkCurrency(req.currency, null);
    const from = req.effectiveFrom ? new Date(req.effectiveFrom) : now;
    if (from.getTime() < now.getTime()) {
      throw fail('effectiveFrom', `effectiveFrom ${from.toISOString()} is in the past (now is ${now.toISOString()}); a price never changes the past`);
    }
    const to = this.checkEnd(req.effectiveTo ?? null, from, now);
    const [taken] = await this.tx.query(
      `SELECT identity FROM price_book_entries WHERE kind = $1 AND cloud_provider = $2 AND region = $3 AND node_type IS NOT DISTINCT FROM $4
          AND highly_available IS NOT DISTINCT FROM $5 AND effective_from = $6`,
      [req.kind, req.cloudProvider, req.region, req.nodeType ?? null, req.highlyAvailable ?? null, from],
    );
    if (taken) {
      throw new ConflictException(`Price book entry ${taken.identity} has the same key and effectiveFrom; update or delete it instead.`);
    }
    const [{ identity }] = await this.tx.query(
      `INSERT INTO price_book_entries (kind, cloud_provider, region, node_type, highly_available, currency, list_price_per_hour,
                                       organisation_type_prices, effective_from, effective_to, created_at, modified_at, identity)
       VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, $8::jsonb, $9, $10, $11, $11, $12) RETURNING identity`,
      [
        req.kind,
        req.cloudProvider,
        req.region,
        req.nodeType ?? null,
        req.highlyAvailable ?? null,
        req.currency,
        req.listPricePerHour,
        JSON.stringify(this.typePrices(req.organisationTypePrices)),
        from,
        to,
        now,
        newIdentity('price_book_entries'),
      ],
    );
    const row = await this.find(identity);
    this.audit.record({
      type: 'PRICE_BOOK_ENTRY_CREATED',
      referencedEntityIdentity: identity,
      subject: this.subject(row),
      details: auditDiff(null, this.audited(row)),
    });
    return this.view(row, now);
  }

  async update(identity: string, req: UpdatePriceBookEntryRequest): Promise<PriceBookEntryResponse> {
    const row = await this.find(identity, true);
    const now = this.clock.now();
    const begun = row.effective_from.getTime() <= now.getTime();
    if (begun) {
      const refused = (['listPricePerHour', 'organisationTypePrices', 'effectiveFrom'] as const).filter((k) => req[k] !== undefined);
      if (refused.length) {
        throw new ConflictException(
          `Price book entry ${identity} applies since ${row.effective_from.toISOString()}; its ${refused.join(', ')} cannot change ` +
            '(a price never changes the past). Close it with effectiveTo and create an entry effective from a later time.',
        );
      }
      if (row.effective_to && row.effective_to.getTime() <= now.getTime() && req.effectiveTo !== undefined) {
        throw new ConflictException(`Price book entry ${identity} ended at ${row.effective_to.toISOString()}; an ended entry does not change.`);
      }
    }
    const from = req.effectiveFrom !== undefined ? new Date(req.effectiveFrom) : row.effective_from;
    if (req.effectiveFrom !== undefined && from.getTime() < now.getTime()) {
      throw fail('effectiveFrom', `effectiveFrom ${from.toISOString()} is in the past (now is ${now.toISOString()}); a price never changes the past`);
    }
    const to = req.effectiveTo !== undefined ? this.checkEnd(req.effectiveTo, from, now) : row.effective_to;
    if (to && to.getTime() <= from.getTime()) throw fail('effectiveTo', 'effectiveTo must be after effectiveFrom');
    const before = this.audited(row);
    const price = req.listPricePerHour !== undefined ? req.listPricePerHour : row.list_price;
    const typePrices = req.organisationTypePrices !== undefined ? this.typePrices(req.organisationTypePrices) : row.organisation_type_prices;
    const after = {
      ...before,
      listPricePerHour: normalise(price),
      organisationTypePrices: typePrices,
      effectiveFrom: from.toISOString(),
      effectiveTo: to ? to.toISOString() : null,
    };
    const details = auditDiff(before, after);
    if (!Object.keys(details).length) return this.view(row, now);
    try {
      await this.tx.query(
        `UPDATE price_book_entries SET list_price_per_hour = $2::numeric, organisation_type_prices = $3::jsonb, effective_from = $4, effective_to = $5,
                modified_at = $6, version = version + 1 WHERE id = $1`,
        [row.id, price, JSON.stringify(typePrices), from, to, now],
      );
    } catch (e) {
      if ((e as { code?: string }).code === '23505') {
        throw new ConflictException(`Another price book entry of the same key is effective from ${from.toISOString()}.`);
      }
      throw e;
    }
    const updated = await this.find(identity);
    this.audit.record({ type: 'PRICE_BOOK_ENTRY_UPDATED', referencedEntityIdentity: identity, subject: this.subject(updated), details });
    return this.view(updated, now);
  }

  async remove(identity: string): Promise<void> {
    const row = await this.find(identity, true);
    const now = this.clock.now();
    if (row.effective_from.getTime() <= now.getTime()) {
      throw new ConflictException(
        `Price book entry ${identity} applies since ${row.effective_from.toISOString()}; only entries that have not begun may be deleted (close it with effectiveTo).`,
      );
    }
    await this.tx.query(`DELETE FROM price_book_entries WHERE id = $1`, [row.id]);
    this.audit.record({
      type: 'PRICE_BOOK_ENTRY_DELETED',
      referencedEntityIdentity: identity,
      subject: this.subject(row),
      details: auditDiff(this.audited(row), null),
    });
  }

  private async find(identity: string, lock = false): Promise<Row> {
    if (!isUuid(identity)) throw new NotFoundException(`There is no price book entry ${identity}.`);
    if (lock) await this.tx.query(`SELECT 1 FROM price_book_entries WHERE identity = $1 FOR UPDATE`, [identity]);
    const [row] = await this.tx.query(`${SELECT} WHERE p.identity = $1`, [identity]);
    if (!row) throw new NotFoundException(`There is no price book entry ${identity}.`);
    return row;
  }

  private checkEnd(value: string | null, from: Date, now: Date): Date | null {
    if (value === null) return null;
    const to = new Date(value);
    if (to.getTime() < now.getTime()) {
      throw fail('effectiveTo', `effectiveTo ${to.toISOString()} is in the past (now is ${now.toISOString()}); a price never changes the past`);
    }
    if (to.getTime() <= from.getTime()) throw fail('effectiveTo', 'effectiveTo must be after effectiveFrom');
    return to;
  }

  private async checkCatalog(provider: string, region: string, nodeType: string | null): Promise<void> {
    const [p] = await this.tx.query(`SELECT id FROM cloud_providers WHERE type = $1`, [provider]);
    if (!p) throw fail('cloudProvider', `cloudProvider '${provider}' is not a cloud provider of the catalog`);
    const [r] = await this.tx.query(`SELECT 1 FROM cloud_provider_regions WHERE provider_id = $1 AND slug = $2`, [p.id, region]);
    if (!r) throw fail('region', `region '${region}' is not a region of cloud provider '${provider}'`);
    if (nodeType !== null) {
      const [n] = await this.tx.query(`SELECT 1 FROM cloud_provider_node_types WHERE provider_id = $1 AND type = $2`, [p.id, nodeType]);
      if (!n) throw fail('nodeType', `nodeType '${nodeType}' is not a node type of cloud provider '${provider}'`);
    }
  }

  private async checkCurrency(currency: string, except: string | null): Promise<void> {
    const [other] = await this.tx.query(`SELECT currency FROM price_book_entries WHERE currency <> $1 AND id IS DISTINCT FROM $2 LIMIT 1`, [
      currency,
      except,
    ]);
    if (other) {
      throw new ConflictException(`The price book is in ${other.currency}; every entry uses one currency (statements add them up).`);
    }
  }

  private typePrices(prices: OrganisationTypePrices | undefined): Record<string, string> {
    const out: Record<string, string> = {};
    for (const type of PRICED_ORGANISATION_TYPES) {
      const value = prices?.[type];
      if (value !== undefined && value !== null) out[type] = normalise(value);
    }
    return out;
  }

  private audited(r: Row) {
    return {
      kind: r.kind,
      cloudProvider: r.cloud_provider,
      region: r.region,
      nodeType: r.node_type,
      highlyAvailable: r.highly_available,
      currency: r.currency,
      listPricePerHour: r.list_price,
      organisationTypePrices: r.organisation_type_prices,
      effectiveFrom: r.effective_from.toISOString(),
      effectiveTo: r.effective_to ? r.effective_to.toISOString() : null,
    };
  }

  private subject(r: Row): string {
    const what = r.kind === 'NODE' ? `node ${r.node_type}` : `control plane${r.highly_available ? ' (HA)' : ''}`;
    return `${what} in ${r.cloud_provider}/${r.region} from ${r.effective_from.toISOString()}`;
  }

  private view(r: Row, now: Date): PriceBookEntryResponse {
    const until = r.valid_to instanceof Date && Number.isFinite(r.valid_to.getTime()) ? r.valid_to : null;
    const state =
      r.effective_from.getTime() > now.getTime() ? 'SCHEDULED' : until && until.getTime() <= now.getTime() ? 'ENDED' : 'IN_EFFECT';
    return {
      identity: r.identity,
      kind: r.kind,
      cloudProvider: r.cloud_provider,
      region: r.region,
      nodeType: r.node_type,
      highlyAvailable: r.highly_available,
      currency: r.currency,
      listPricePerHour: r.list_price,
      organisationTypePrices: r.organisation_type_prices,
      effectiveFrom: r.effective_from.toISOString(),
      effectiveTo: r.effective_to ? r.effective_to.toISOString() : null,
      appliesUntil: until ? until.toISOString() : null,
      state,
      createdAt: r.created_at.toISOString(),
      modifiedAt: r.modified_at.toISOString(),
    };
  }
}
