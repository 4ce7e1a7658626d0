import { Module } from '@nestjs/common';
import { OrganisationEvents } from './organisation-events';
import { OrganisationMembersController } from './organisation-members.controller';
import { OrganisationMembersService } from './organisation-members.service';
import { OrganisationsController } from './organisations.controller';
import { OrganisationsService } from './organisations.service';

/** Organisations, members, memberships, quotas and compute information. */
@Module({
  controllers: [OrganisationsController, OrganisationMembersController],
  providers: [OrganisationsService, OrganisationMembersService, OrganisationEvents],
  exports: [OrganisationsService, OrganisationMembersService, OrganisationEvents],
})
export class OrganisationsModule {}
