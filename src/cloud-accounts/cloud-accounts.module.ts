import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module';
import { CloudAccountsController } from './cloud-accounts.controller';
import { CloudAccountsService } from './cloud-accounts.service';
import { CloudCredentialsController } from './cloud-credentials.controller';
import { CloudCredentialsService } from './cloud-credentials.service';

/** Cloud accounts and their credentials (secrets sealed with SecretBox). */
@Module({
  imports: [CatalogModule],
  controllers: [CloudAccountsController, CloudCredentialsController],
  providers: [CloudAccountsService, CloudCredentialsService],
  exports: [CloudAccountsService, CloudCredentialsService],
})
export class CloudAccountsModule {}
