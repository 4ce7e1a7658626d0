import { ServiceState } from './health/service-state';
import { DynamicModule, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { AuditModule } from './audit/audit.module';
import { IdempotencyModule } from './idempotency/idempotency.module';
import { AuditEventSink } from './audit/audit-event-sink';
import { WebhookOutbox } from './webhooks/webhook-outbox';
import { AuthModule } from './auth/auth.module';
import { CatalogModule } from './catalog/catalog.module';
import { CommonModule } from './common/common.module';
import { AppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { HealthModule } from './health/health.module';
import { loggerOptions } from './logging';
import { JobsModule } from './jobs/jobs.module';
import { MeteringModule } from './metering/metering.module';
import { ExecutorModule } from './executor/executor.module';
import { EXECUTOR_WORKER } from './worker/executor-worker';
import { MetricsModule } from './metrics/metrics.module';
import { TokensModule } from './tokens/tokens.module';
import { UsersModule } from './users/users.module';
import { EnvironmentsModule } from './environments/environments.module';
import { CloudAccountsModule } from './cloud-accounts/cloud-accounts.module';
import { OrganisationsModule } from './organisations/organisations.module';
import { AuditEventsModule } from './audit/audit-events.module';
import { ActivityModule } from './activity/activity.module';
import { MaintenanceModule } from './maintenance/maintenance.module';
import { UpgradesModule } from './upgrades/upgrades.module';
import { SchedulerModule } from './scheduler/scheduler.module';
import { ObservabilityModule } from './observability/observability.module';
import { ClustersModule } from './clusters/clusters.module';
import { ClusterChangeGate } from './clusters/cluster-change-gate';
import { ClusterPolicyEnforcer } from './policies/cluster-policy-enforcer';
import { WebhooksModule } from './webhooks/webhooks.module';
import { WebhookOutboxModule } from './webhooks/webhook-outbox.module';
import { RetentionModule } from './retention/retention.module';
import { PoliciesModule } from './policies/policies.module';
import { DemoModule } from './demo/demo.module';
import { AdminModule } from './admin/admin.module';
import { ProvisioningModule } from './provisioning/provisioning.module';

/** Feature modules, one per bounded context (docs/architecture.md). */
const FEATURE_MODULES = [
  ClustersModule,
  ProvisioningModule,
  ObservabilityModule,
  EnvironmentsModule,
  CloudAccountsModule,
  MaintenanceModule,
  UpgradesModule,
  SchedulerModule,
  TokensModule,
  UsersModule,
  HealthModule,
  CatalogModule,
  OrganisationsModule,
  AuditEventsModule,
  ActivityModule,
  WebhooksModule,
  RetentionModule,
  PoliciesModule,
  MeteringModule,
  AdminModule,
  DemoModule,
];

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, databaseUrl: string, state = new ServiceState(), logDestination?: NodeJS.WritableStream): DynamicModule {
    return {
      module: AppModule,
      global: true,
      providers: [
        { provide: ServiceState, useValue: state },
        // The ports a lower module declares, bound to the higher module that implements them (docs/architecture.md,
        // "Module layers"): the app is the one place that knows both.
        { provide: AuditEventSink, useExisting: WebhookOutbox },
        { provide: ClusterChangeGate, useExisting: ClusterPolicyEnforcer },
      ],
      exports: [ServiceState, AuditEventSink, ClusterChangeGate],
      imports: [
        ConfigModule.forRoot(config),
        LoggerModule.forRoot(loggerOptions(config, logDestination)),
        CommonModule,
        DatabaseModule.forRoot(databaseUrl, {
          migrate: config.migrateAtStart,
          startupSignal: state.startupSignal,
          onSchemaWait: state.onSchemaWait,
          budget: { timeoutMs: config.DATABASE_TIMEOUT_MS, readRetryWaitMs: config.READ_RETRY_WAIT_MS },
        }),
        MetricsModule,
        JobsModule,
        ExecutorModule.forRoot(EXECUTOR_WORKER),
        AuditModule,
        IdempotencyModule,
        WebhookOutboxModule,
        AuthModule,
        ...FEATURE_MODULES,
      ],
    };
  }
}
