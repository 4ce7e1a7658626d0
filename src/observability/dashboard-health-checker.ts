import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { DataSource } from 'typeorm';
import { InjectBackgroundDataSource } from '../database/background-pool';
import { AuditService } from '../audit/audit.service';
import { SYSTEM_ACTOR } from '../identity/principal';
import { Clock } from '../common/clock';
import { OutboundPolicy, OutboundPolicyError } from '../common/outbound-policy';
import { SecretBox } from '../common/secret-box';
import type { BackgroundJob } from '../jobs/background-job';
import { BackgroundJobs } from '../jobs/background-jobs.service';
import type { JobLoop } from '../jobs/job-loop';
import type { DashboardIntegrationStatus } from './dashboard-integration.entity';
import { setImmediate } from 'timers/promises';

/** How often the loop runs, and how long a result stays fresh before an integration is checked again. */
export const DASHBOARD_CHECK_INTERVAL_MS = 60_000;
const BATCH = 20;

interface Claimed {
  id: string;
  identity: string;
  organisation_id: string;
  org_slug: string;
  slug: string;
  url: string;
  api_token_ciphertext: string;
  status: DashboardIntegrationStatus;
  status_message: string | null;
}

export interface HealthOutcome {
  status: DashboardIntegrationStatus;
  statusMessage: string;
}

/**
 * Background check of dashboard integrations: calls `${url}/api/health` with the API token
 * (through the outbound policy) and sets status CONNECTED (2xx) or ERROR with the reason.
 * Rows are claimed by moving `checked_at` forward under FOR UPDATE SKIP LOCKED, so replicas never
 * check the same integration twice in one interval; the HTTP call runs outside any transaction.
 */
@Injectable()
export class DashboardHealthChecker implements BackgroundJob<number> {
  private readonly loop: JobLoop<number>;

  constructor(
    // A loop's own SQL runs on the background pool (background-pool.ts).
    @InjectBackgroundDataSource() private readonly dataSource: DataSource,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly cls: ClsService,
    private readonly clock: Clock,
    private readonly secrets: SecretBox,
    private readonly outbound: OutboundPolicy,
    private readonly audit: AuditService,
    jobs: BackgroundJobs,
  ) {
    this.loop = jobs.register(this, { name: 'dashboard-health', logContext: 'DashboardHealth', everyMs: DASHBOARD_CHECK_INTERVAL_MS });
  }

  /** Checks every integration that is due now (never checked, or checked an interval ago). Returns how many. */
  runOnce(): Promise<number> {
    return this.loop.runPass();
  }

  async pass(): Promise<number> {
    let checked = 0;
    for (;;) {
      const batch = await this.claim();
      if (batch.length === 0) return checked;
      await Promise.all(batch.map((row) => this.checkOne(row)));
      checked += batch.length;
      if (batch.length < BATCH) return checked;
      // Between batches, the event loop serves what is queued (requests) first.
      await setImmediate();
    }
  }

  private async claim(): Promise<Claimed[]> {
    const now = this.clock.now();
    const due = new Date(now.getTime() - DASHBOARD_CHECK_INTERVAL_MS);
    const [rows] = await this.dataSource.query(
      `UPDATE dashboard_integrations d SET checked_at = $1
         FROM organisations o
        WHERE o.id = d.organisation_id AND d.id IN (
          SELECT id FROM dashboard_integrations
           WHERE deleted_at IS NULL AND (checked_at IS NULL OR checked_at <= $2)
           ORDER BY checked_at NULLS FIRST, id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
        RETURNING d.id, d.identity, d.organisation_id, o.slug AS org_slug, d.slug, d.url, d.api_token_ciphertext,
                  d.status, d.status_message`,
      [now, due],
    );
    return rows as Claimed[];
  }

  /** What the health endpoint says about one integration. */
  async probe(url: string, token: string): Promise<HealthOutcome> {
    try {
      const res = await this.outbound.request(`${url.replace(/\/+$/, '')}/api/health`, {
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
        maxBytes: 64 * 1024,
      });
      if (res.status >= 200 && res.status < 300) return { status: 'CONNECTED', statusMessage: `Connected: the health endpoint answered HTTP ${res.status}.` };
      if (res.status === 401 || res.status === 403)
        return { status: 'ERROR', statusMessage: `The dashboard refused the API token (HTTP ${res.status}): unauthorised.` };
      return { status: 'ERROR', statusMessage: `The dashboard health endpoint answered HTTP ${res.status}.` };
    } catch (e) {
      if (e instanceof OutboundPolicyError) {
        switch (e.code) {
          case 'TIMEOUT':
            return { status: 'ERROR', statusMessage: `The dashboard did not answer in time (timeout: ${e.message}).` };
          case 'ADDRESS':
          case 'SCHEME':
          case 'USERINFO':
          case 'SYNTAX':
            return { status: 'ERROR', statusMessage: `The dashboard URL is refused by the outbound policy: it ${e.message}.` };
          default:
            return { status: 'ERROR', statusMessage: `The dashboard is unreachable: ${e.message}.` };
        }
      }
      return { status: 'ERROR', statusMessage: 'The dashboard is unreachable.' };
    }
  }

  private async checkOne(row: Claimed): Promise<void> {
    let outcome: HealthOutcome;
    try {
      const token = this.secrets.open(row.api_token_ciphertext, row.identity);
      outcome = await this.probe(row.url, token);
    } catch {
      outcome = { status: 'ERROR', statusMessage: 'The stored API token could not be decrypted; create the integration again.' };
    }
    await this.cls.run(() =>
      this.txHost.withTransaction(async () => {
        const now = this.clock.now();
        const [updated] = await this.txHost.tx.query(
          `UPDATE dashboard_integrations SET status = $2, status_message = $3, modified_at = CASE WHEN status <> $2 THEN $4 ELSE modified_at END
            WHERE id = $1 AND deleted_at IS NULL RETURNING id`,
          [row.id, outcome.status, outcome.statusMessage, now],
        );
        if (!Array.isArray(updated) || updated.length === 0) return; // deleted meanwhile
        if (row.status !== outcome.status) {
          await this.audit.write(
            {
              type: 'DASHBOARD_INTEGRATION_STATUS_CHANGED',
              organisation: { id: Number(row.organisation_id), slug: row.org_slug },
              referencedEntityIdentity: row.identity,
              subject: `${row.slug} to ${outcome.status}`,
              details: { status: { old: row.status, new: outcome.status }, statusMessage: { old: row.status_message, new: outcome.statusMessage } },
            },
            SYSTEM_ACTOR,
          );
        }
      }),
    );
  }
}
