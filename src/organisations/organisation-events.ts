import { Injectable } from '@nestjs/common';
import { Hooks } from '../common/hooks';
import type { OrganisationEntity } from '../identity/organisation.entity';

/**
 * The organisations module's events, for the modules above it (a port: they register, it does not import them).
 * `created` runs in the transaction that creates the organisation, after its owner's membership and before it is
 * read back and audited: e.g. observability adds the organisation's alerting integration.
 */
@Injectable()
export class OrganisationEvents {
  readonly created = new Hooks<[organisation: OrganisationEntity, now: Date]>();
}
