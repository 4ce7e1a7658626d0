import { ClsService } from 'nestjs-cls';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import * as fs from 'fs';
import * as path from 'path';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { AuditService } from '../audit/audit.service';
import { SYSTEM_ACTOR } from '../identity/principal';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { TokensService } from '../tokens/tokens.service';
import { UserEntity } from '../identity/user.entity';

/**
 * First start: when no user exists, create a platform administrator and one PAT for it, print the
 * token once and (embedded database) write it to DATA_DIR/admin-token. Replica-safe via an advisory lock.
 */
@Injectable()
export class BootstrapAdminService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Bootstrap');

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly audit: AuditService,
    private readonly tokens: TokensService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly cls: ClsService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.cls.run(() =>
      this.txHost.withTransaction(async () => {
        const em = this.txHost.tx;
        await em.query('SELECT pg_advisory_xact_lock(724002)');
        const [{ count }] = await em.query('SELECT count(*)::int AS count FROM users');
        if (count > 0) return;
        if (!this.config.embeddedDatabase && !this.config.BOOTSTRAP_ADMIN_TOKEN && !this.config.BOOTSTRAP_ADMIN_TOKEN_FILE) {
          // A shared database is production: a token printed to stdout would end up in log pipelines.
          throw new Error(
            'The first start on an external database (DATABASE_URL) needs BOOTSTRAP_ADMIN_TOKEN (e.g. from a Secret) ' +
              'or BOOTSTRAP_ADMIN_TOKEN_FILE (a path the generated token is written to); the token is never logged.',
          );
        }
        const now = this.clock.now();
        const users = em.getRepository(UserEntity);
        const admin = await users.save(
          users.create({
            username: this.config.BOOTSTRAP_ADMIN_USERNAME,
            email: this.config.BOOTSTRAP_ADMIN_EMAIL,
            oidcId: null,
            canCreateOrganisations: true,
            platformAdmin: true,
            createdAt: now,
            modifiedAt: now,
          }),
        );
        // The token goes through the same service as any other PAT (hashing, expiry), in this transaction.
        const issued = await this.tokens.provision(
          admin,
          { name: 'bootstrap-admin', expireAt: new Date(now.getTime() + 365 * 24 * 3600 * 1000).toISOString() },
          { token: this.config.BOOTSTRAP_ADMIN_TOKEN, audit: false },
        );
        await this.audit.write(
          {
            type: 'USER_ADDED',
            referencedEntityIdentity: admin.identity,
            details: { username: { old: null, new: admin.username }, platformAdmin: { old: null, new: true } },
          },
          SYSTEM_ACTOR,
        );
        this.announce(issued.token!);
      }),
    );
  }

  /**
   * Where the first administrator's token goes: printed (and written to DATA_DIR/admin-token) only with the
   * embedded database, i.e. local use; otherwise written to BOOTSTRAP_ADMIN_TOKEN_FILE, or not shown at all
   * when the operator supplied it (BOOTSTRAP_ADMIN_TOKEN). Never into the structured log.
   */
  private announce(token: string): void {
    const { BOOTSTRAP_ADMIN_TOKEN_FILE: tokenFile, BOOTSTRAP_ADMIN_USERNAME: username } = this.config;
    if (tokenFile) {
      fs.mkdirSync(path.dirname(path.resolve(tokenFile)), { recursive: true });
      fs.writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
    }
    if (this.config.BOOTSTRAP_ADMIN_TOKEN) {
      this.logger.log(`Bootstrap administrator '${username}' created with the token from BOOTSTRAP_ADMIN_TOKEN`);
      return;
    }
    if (!this.config.embeddedDatabase) {
      this.logger.log(`Bootstrap administrator '${username}' created; its token was written to ${tokenFile}`);
      return;
    }
    const file = path.resolve(this.config.DATA_DIR, 'admin-token');
    fs.writeFileSync(file, token + '\n', { mode: 0o600 });
    this.startupNotice = [
      'A platform administrator was created on this first start.',
      `  username: ${username}`,
      `  personal access token (shown once): ${token}`,
      `  also written to ${file}`,
      '  use it as: Authorization: Token <token> (Swagger UI: Authorize)',
    ].join('\n');
    this.logger.log('Bootstrap administrator created');
  }

  /** Printed by main.ts at the end of the start-up output (local use only), then forgotten. */
  startupNotice: string | null = null;
}
