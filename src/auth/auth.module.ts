import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { TokensModule } from '../tokens/tokens.module';
import { UsersModule } from '../users/users.module';
import { ApiAuthGuard } from './auth.guard';
import { BootstrapAdminService } from './bootstrap-admin.service';
import { CredentialStrategy } from './credential.strategy';
import { OidcVerifier } from './oidc-verifier.service';
import { OrganisationAccessGuard } from './organisation-access';
import { PrincipalCache } from './principal-cache';
import { RequestRateLimits } from './request-rate-limits';
import { MetricsModule } from '../metrics/metrics.module';

@Module({
  imports: [TokensModule, UsersModule, MetricsModule],
  providers: [
    RequestRateLimits,
    OidcVerifier,
    PrincipalCache,
    CredentialStrategy,
    BootstrapAdminService,
    // Order matters: authenticate first, then resolve the organisation role.
    { provide: APP_GUARD, useClass: ApiAuthGuard },
    { provide: APP_GUARD, useClass: OrganisationAccessGuard },
  ],
  exports: [RequestRateLimits, PrincipalCache],
})
export class AuthModule {}
