import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { ClsService } from 'nestjs-cls';
import { AuditRecorder } from '../audit/audit-recorder';
import { AuditService } from '../audit/audit.service';
import { Actor, actorOf, SYSTEM_ACTOR } from '../identity/principal';
import { CloudAccountsService } from '../cloud-accounts/cloud-accounts.service';
import { CloudCredentialsService } from '../cloud-accounts/cloud-credentials.service';
import { CreateCloudAccountRequest } from '../cloud-accounts/dto/cloud-account.dto';
import { Platform1CredentialsRequest } from '../cloud-accounts/dto/credentials.dto';
import { CreateClusterRequest } from '../clusters/dto/cluster.dto';
import { CreateClusterCommand, CreateClusterUseCase } from '../clusters/use-cases/create-cluster.use-case';
import { Clock } from '../common/clock';
import { flattenValidationErrors } from '../common/errors';
import { newIdentity, pinIdentities } from '../common/pinned-identities';
import { AppConfig } from '../config/app-config';
import { CreateEnvironmentRequest } from '../environments/dto/environment.dto';
import { EnvironmentsService } from '../environments/environments.service';
import { CreateMaintenanceScheduleRequest } from '../maintenance/dto/maintenance-schedule.dto';
import { MaintenanceService } from '../maintenance/maintenance.service';
import { AlertsService } from '../observability/alerts.service';
import { CreateSilenceRequest } from '../observability/dto/silence.dto';
import { SilencesService } from '../observability/silences.service';
import { TenantsService } from '../observability/tenants.service';
import { CreateOrganisationRequest } from '../organisations/dto/organisation.dto';
import { OrganisationEntity } from '../identity/organisation.entity';
import { OrganisationsService } from '../organisations/organisations.service';
import { OrganisationMembersService } from '../organisations/organisation-members.service';
import { AddMemberRequest } from '../organisations/dto/member.dto';
import { ClusterPoliciesService } from '../policies/cluster-policies.service';
import { CreateClusterPolicyRequest } from '../policies/dto/cluster-policy.dto';
import { CreateScheduledClusterUpgradeRequest } from '../upgrades/dto/scheduled-cluster-upgrade.dto';
import { UpgradesService } from '../upgrades/upgrades.service';
import { ClusterDriversService } from '../cluster-drivers/cluster-drivers.service';
import { CreateClusterDriverRequest } from '../cluster-drivers/dto/cluster-driver.dto';
import { BudgetsService } from '../metering/budgets.service';
import { CreateBudgetRequest } from '../metering/dto/budget.dto';
import { StatementCloser } from '../metering/statement-closer.service';
import { UserEntity } from '../identity/user.entity';
import { ProvisionPersonalAccessTokenRequest } from '../tokens/dto/personal-access-token.dto';
import { TokensService } from '../tokens/tokens.service';
import { AddUserRequest } from '../users/dto/user.dto';
import { UsersService } from '../users/users.service';
import { CreateWebhookRequest } from '../webhooks/dto/webhook.dto';
import { WebhooksService } from '../webhooks/webhooks.service';
import { DEMO_IDENTITIES, DEMO_IDENTITY_TABLES, DEMO_SLUGS } from './demo-identities';

const MARKER = 'demo-data';

/** A request body as the API would receive it: transformed and validated by the same DTO, or an error naming the field. */
/** The demo driver's signing secret: a public example value (the driver is disabled; rotate it before enabling). */
const DEMO_DRIVER_SIGNING_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo=';

function body<T extends object>(type: new () => T, plain: object): T {
  const dto = plainToInstance(type, plain);
  const errors = flattenValidationErrors(validateSync(dto, { whitelist: true, forbidNonWhitelisted: true }));
  if (errors.length) throw new Error(`Demo data: invalid ${type.name}: ${errors.map((e) => e.message).join('; ')}`);
  return dto;
}

/**
 * The demo organisation of a fresh install (DEMO_DATA): `acme` owned by the bootstrap administrator, with the
 * resources the API document's examples name, under the fixed identities of demo-identities.ts. Everything is
 * created through the services the API uses (rules, policies, audit and activity rows, webhook events) in one
 * transaction, once per database (a row in start_up_markers), and only while no organisation exists.
 */
@Injectable()
export class DemoDataService {
  private readonly logger = new Logger('DemoData');

  /** Printed by main.ts with the start-up banner when the demo organisation was created on this start. */
  startupNotice: string | null = null;

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly cls: ClsService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly recorder: AuditRecorder,
    private readonly audit: AuditService,
    private readonly organisations: OrganisationsService,
    private readonly members: OrganisationMembersService,
    private readonly environments: EnvironmentsService,
    private readonly accounts: CloudAccountsService,
    private readonly credentials: CloudCredentialsService,
    private readonly maintenance: MaintenanceService,
    private readonly createCluster: CreateClusterUseCase,
    private readonly tenants: TenantsService,
    private readonly alerts: AlertsService,
    private readonly upgrades: UpgradesService,
    private readonly webhooks: WebhooksService,
    private readonly policies: ClusterPoliciesService,
    private readonly budgets: BudgetsService,
    private readonly drivers: ClusterDriversService,
    private readonly statements: StatementCloser,
    private readonly silences: SilencesService,
    private readonly tokens: TokensService,
    private readonly users: UsersService,
  ) {}

  /** Creates the demo organisation when enabled and the database is fresh; returns whether it did. */
  async seedIfFresh(): Promise<boolean> {
    if (!this.config.demoData) return false;
    const created = await this.cls.run(() =>
      this.txHost.withTransaction(async () => {
        const tx = this.txHost.tx;
        await tx.query('SELECT pg_advisory_xact_lock(724003)');
        const [done] = await tx.query(`SELECT 1 FROM start_up_markers WHERE name = $1`, [MARKER]);
        if (done) {
          const [demo] = await tx.query(`SELECT 1 FROM organisations WHERE identity = $1`, [DEMO_IDENTITIES.organisation]);
          if (demo) this.startupNotice = `Demo organisation '${DEMO_SLUGS.organisation}' (created on the first start) is there to try; DEMO_DATA=false skips creating it on a fresh install.`;
          return false;
        }
        await tx.query(`INSERT INTO start_up_markers (name, created_at) VALUES ($1, $2)`, [MARKER, this.clock.now()]);
        const [{ n }] = await tx.query(`SELECT count(*)::int AS n FROM organisations`);
        if (n > 0) {
          this.logger.log('Demo data not created: the database already has organisations');
          return false;
        }
        const admin = await tx.getRepository(UserEntity).findOne({ where: { platformAdmin: true }, order: { id: 'ASC' } });
        if (!admin) throw new Error('Demo data: no platform administrator to own the demo organisation');
        // One pin per table; the platform policy's, the spare credentials' and the colleague's membership are pinned
        // just before they are created (after the organisation's policy, the primary credentials, the owner's membership).
        const { platformPolicy: _later, spareCloudCredentials: _spare, colleagueMember: _colleague, ...first } = DEMO_IDENTITIES;
        pinIdentities(Object.fromEntries(Object.entries(first).map(([k, v]) => [DEMO_IDENTITY_TABLES[k as keyof typeof DEMO_IDENTITIES], v])));
        await this.create(admin);
        return true;
      }),
    );
    if (created) {
      // Last month's statement of the demo usage, closed now rather than at the job's next pass.
      await this.statements.runOnce();
      this.logger.log(`Demo organisation '${DEMO_SLUGS.organisation}' created`);
      this.startupNotice = [
        `Demo organisation '${DEMO_SLUGS.organisation}' (owner: the bootstrap administrator) was created on this first start:`,
        `  environment ${DEMO_SLUGS.environment}, cluster ${DEMO_SLUGS.cluster} (provisioned by the simulated driver in the background),`,
        '  a colleague (member sam.operator), a cloud account with two keys (the old one to try deleting), a maintenance',
        '  schedule, a scheduled upgrade, an alert and a silence, a disabled webhook, a cluster policy, a second personal',
        '  access token of the administrator (never shown) to try revoking, a price book, a month of usage with its',
        '  statement, and a budget.',
        "  Swagger UI's pre-filled example values address them. Start with DEMO_DATA=false for an empty service.",
      ].join('\n');
    }
    return created;
  }

  private async create(admin: UserEntity): Promise<void> {
    const actor = actorOf({ user: admin, kind: 'pat' });
    const org = await this.organisations.create(
      admin,
      body(CreateOrganisationRequest, {
        organisationName: 'Acme',
        organisationType: 'BUSINESS',
        companyName: 'Acme B.V.',
        contactEmail: { email: 'ops@acme.example' },
        acceptedAgreements: this.config.requiredAgreements.map((agreementSlug) => ({ agreementSlug })),
      }),
    );
    await this.environments.create(
      org,
      body(CreateEnvironmentRequest, { name: DEMO_SLUGS.environment, description: 'Customer-facing workloads', purpose: 'Runs the web shop', type: 'production' }),
    );
    const account = await this.accounts.create(org, body(CreateCloudAccountRequest, { cloudProfile: 'platform-1-default', displayName: 'Production account' }));
    await this.credentials.create(
      org,
      account.identity,
      'platform_1',
      body(Platform1CredentialsRequest, {
        displayName: 'ci deployer',
        // The documentation's example key pair: the simulated driver accepts any.
        credentials: { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', accessKeySecret: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
      }),
    );
    // Not primary (the account has one): the example of DELETE .../credentials/{credentialsIdentity}.
    pinIdentities({ [DEMO_IDENTITY_TABLES.spareCloudCredentials]: DEMO_IDENTITIES.spareCloudCredentials });
    await this.credentials.create(
      org,
      account.identity,
      'platform_1',
      body(Platform1CredentialsRequest, {
        displayName: 'old deployer key (rotated out; delete it to try)',
        credentials: { accessKeyId: 'AKIAI44QH8DHBEXAMPLE', accessKeySecret: 'je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY' },
      }),
    );
    const schedule = await this.maintenance.create(
      org,
      body(CreateMaintenanceScheduleRequest, {
        name: 'Weekly Tuesday night',
        windows: [{ day: 'TUESDAY', startTime: '02:00', duration: 120 }],
        timeZone: 'Europe/Amsterdam',
      }),
    );
    const cluster = await this.createCluster.execute(
      new CreateClusterCommand(
        org,
        DEMO_SLUGS.environment,
        body(CreateClusterRequest, {
          name: DEMO_SLUGS.cluster,
          cloudAccountIdentity: account.identity,
          region: 'eu-central-1',
          version: '1.31.6',
          description: 'Customer-facing web shop',
          maintenanceScheduleIdentity: schedule.identity,
          nodePools: [
            { name: 'system', nodeSize: 'm5.large', minSize: 2, maxSize: 3 },
            { name: 'workers', nodeSize: 'm5.xlarge', minSize: 2, maxSize: 6, autoScaling: true, labels: { tier: 'web' } },
          ],
        }),
      ),
    );
    await this.seedUsage(org);
    // A registered driver, disabled: the demo's clusters stay on the in-process simulated driver until an
    // administrator starts the example driver (`npm run driver:example -- --port 9100 --secret …`) and enables it.
    await this.drivers.create(
      body(CreateClusterDriverRequest, {
        name: 'example-driver',
        url: 'http://127.0.0.1:9100',
        signingSecret: DEMO_DRIVER_SIGNING_SECRET,
        cloudProviders: ['platform_1'],
        enabled: false,
      }),
    );
    const windowStart = new Date(this.clock.now().getTime() + 7 * 24 * 3600 * 1000);
    await this.upgrades.adminCreate(
      admin,
      body(CreateScheduledClusterUpgradeRequest, {
        clusterIdentity: cluster.identity,
        toClusterVersion: '1.32.1',
        windowStart: windowStart.toISOString(),
        windowEnd: new Date(windowStart.getTime() + 2 * 3600 * 1000).toISOString(),
        reason: 'Move to the next minor version',
      }),
    );
    await this.policies.create(
      org,
      body(CreateClusterPolicyRequest, {
        // Not the name of the document's example policy, so that example can be created next to it.
        name: 'production-ha-reminder',
        description: 'A production cluster runs a highly available control plane.',
        expression: 'object.highlyAvailable',
        message: 'production clusters should be highly available (enableHighAvailability: true)',
        // Warn, not Deny: the demo cluster is not highly available and stays changeable.
        action: 'Warn',
        environmentTypes: ['production'],
      }),
      admin.username,
    );
    pinIdentities({ [DEMO_IDENTITY_TABLES.platformPolicy]: DEMO_IDENTITIES.platformPolicy });
    await this.policies.create(
      null,
      body(CreateClusterPolicyRequest, {
        name: 'audit-pod-security',
        description: 'Records clusters without a Pod Security Standards profile; blocks nothing.',
        expression: 'object.podSecurityStandardsProfile != null',
        message: 'the cluster has no Pod Security Standards profile',
        action: 'Audit',
      }),
      admin.username,
    );
    // Disabled, so nothing is ever sent: hooks.example.com is a documentation name (RFC 2606). Its address is not
    // resolved now (a first start must not depend on DNS); enabling it with another URL, and every delivery, checks it.
    await this.webhooks.create(
      org,
      body(CreateWebhookRequest, {
        url: 'https://hooks.example.com/cluster-events',
        description: 'Upgrade announcements to the platform channel (disabled: set a URL you own, then enable)',
        eventTypes: ['SCHEDULED_CLUSTER_UPGRADE_ANNOUNCED', 'CLUSTER_STATUS_CHANGED'],
        enabled: false,
      }),
      admin.username,
      { checkAddress: false },
    );
    // An active silence, and a second token of the administrator (its value is not kept): the examples of
    // DELETE .../silences/{silenceId} and DELETE /sts/v1/personal-access-tokens/{token_id}.
    const now = this.clock.now();
    await this.silences.create(
      org,
      DEMO_SLUGS.tenant,
      body(CreateSilenceRequest, {
        matchers: [{ name: 'alertname', value: 'KubeJobFailed', isRegex: false, isEqual: true }],
        startsAt: now.toISOString(),
        endsAt: new Date(now.getTime() + 30 * 24 * 3600 * 1000).toISOString(),
        comment: 'Nightly batch jobs are being reworked',
      }),
      admin.username,
    );
    // A colleague who is not a member yet: the example of POST .../members.
    await this.users.add(body(AddUserRequest, { username: 'jane.doe', email: 'jane.doe@acme.example' }));
    // A colleague who is one: the example of PATCH and DELETE .../members/{memberIdentity}.
    await this.users.add(body(AddUserRequest, { username: 'sam.operator', email: 'sam.operator@acme.example' }));
    pinIdentities({ [DEMO_IDENTITY_TABLES.colleagueMember]: DEMO_IDENTITIES.colleagueMember });
    const [owner] = await this.txHost.tx.query(`SELECT role FROM organisation_members WHERE organisation_id = $1 AND user_id = $2`, [org.id, admin.id]);
    await this.members.add({ organisation: org, member: null, role: owner.role }, body(AddMemberRequest, { username: 'sam.operator', role: 'MEMBER', kubernetesRole: 'EDIT' }));
    await this.tokens.provision(admin, body(ProvisionPersonalAccessTokenRequest, { name: 'demo token (never shown; revoke it to try)' }));
    await this.writeAudit(actor);
    await this.receiveAlert(org);
    await this.writeAudit(SYSTEM_ACTOR); // alerts arrive from the alert manager, not from a user
  }

  /** One firing alert in the cluster's tenant, received as the alert manager would send it. */
  private async receiveAlert(org: OrganisationEntity): Promise<void> {
    const { token } = await this.tenants.rotateWebhookToken(org, DEMO_SLUGS.tenant);
    const startsAt = new Date(this.clock.now().getTime() - 10 * 60 * 1000).toISOString();
    await this.alerts.receive(
      DEMO_SLUGS.tenant,
      token,
      // The raw body: the service validates it as the alert manager's (AlertManagerWebhookDto).
      {
        version: '4',
        status: 'firing',
        receiver: 'cluster-management',
        alerts: [
          {
            status: 'firing',
            labels: { alertname: 'KubePodCrashLooping', severity: 'warning', namespace: 'shop', pod: 'checkout-7d9f8b6c5-x2x4q' },
            annotations: { summary: 'Pod shop/checkout-7d9f8b6c5-x2x4q is crash looping' },
            startsAt,
          },
        ],
      },
    );
  }

  /**
   * A month of usage to look at (docs/metering.md): a price book from the start of last month (UTC), the demo cluster's
   * ledger reaching back there (its workers pool ran 4 nodes for the first ten days, then 2), and a monthly budget.
   * History is written straight into the ledger and the price book: the API never writes the past.
   */
  private async seedUsage(org: OrganisationEntity): Promise<void> {
    const tx = this.txHost.tx;
    const now = this.clock.now();
    const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
    const tenDays = new Date(from.getTime() + 10 * 24 * 3600 * 1000);
    const prices: [string, string | null, boolean | null, string, string][] = [
      ['CONTROL_PLANE', null, false, '0.10', '0.09'],
      ['CONTROL_PLANE', null, true, '0.30', '0.27'],
      ['NODE', 'm5.large', null, '0.096', '0.09'],
      ['NODE', 'm5.xlarge', null, '0.192', '0.18'],
    ];
    for (const [kind, nodeType, ha, list, business] of prices) {
      await tx.query(
        `INSERT INTO price_book_entries (identity, kind, cloud_provider, region, node_type, highly_available, currency, list_price_per_hour,
                                         organisation_type_prices, effective_from, created_at, modified_at)
         VALUES ($1, $2, 'platform_1', 'eu-central-1', $3, $4, 'EUR', $5::numeric, $6::jsonb, $7, $8, $8)`,
        [newIdentity('price_book_entries'), kind, nodeType, ha, list, JSON.stringify({ BUSINESS: business }), from, now],
      );
    }
    await tx.query(`UPDATE usage_intervals SET started_at = $2 WHERE organisation_id = $1 AND ended_at IS NULL AND node_pool_name IS DISTINCT FROM 'workers'`, [
      org.id,
      from,
    ]);
    await tx.query(
      `INSERT INTO usage_intervals (kind, organisation_id, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug, cluster_name,
                                    cloud_provider, region, node_pool_id, node_pool_identity, node_pool_name, node_type, node_count, started_at, ended_at)
       SELECT kind, organisation_id, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug, cluster_name, cloud_provider, region,
              node_pool_id, node_pool_identity, node_pool_name, node_type, 4, $2, $3
         FROM usage_intervals WHERE organisation_id = $1 AND ended_at IS NULL AND node_pool_name = 'workers'`,
      [org.id, from, tenDays],
    );
    await tx.query(`UPDATE usage_intervals SET started_at = $2 WHERE organisation_id = $1 AND ended_at IS NULL AND node_pool_name = 'workers'`, [
      org.id,
      tenDays,
    ]);
    await this.budgets.create(org, body(CreateBudgetRequest, { name: 'Monthly platform spend', amount: '500', currency: 'EUR' }));
  }

  /** Writes the audit entries recorded so far, as the audit interceptor does for a request. */
  private async writeAudit(actor: Actor): Promise<void> {
    for (const entry of this.recorder.take()) await this.audit.write(entry, actor);
  }
}
