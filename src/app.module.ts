import { DynamicModule, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { AuditModule } from './audit/audit.module';
import { AuthModule } from './auth/auth.module';
import { CatalogModule } from './catalog/catalog.module';
import { CommonModule } from './common/common.module';
import { AppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { HealthModule } from './health/health.module';
import { loggerOptions } from './logging';
import { MetricsModule } from './metrics/metrics.module';
import { TokensModule } from './tokens/tokens.module';
import { UsersModule } from './users/users.module';
import { OrganisationsModule } from './organisations/organisations.module';
import { AuditEventsModule } from './audit/audit-events.module';
import { ActivityModule } from './activity/activity.module';

/** Feature modules, one per bounded context (DESIGN.md section 1). */
const FEATURE_MODULES = [
  TokensModule,
  UsersModule,
  HealthModule,
  CatalogModule,
  OrganisationsModule,
  AuditEventsModule,
  ActivityModule,
];

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, databaseUrl: string): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggerModule.forRoot(loggerOptions(config)),
        CommonModule,
        DatabaseModule.forRoot(databaseUrl),
        MetricsModule,
        AuditModule,
        AuthModule,
        ...FEATURE_MODULES,
      ],
    };
  }
}
