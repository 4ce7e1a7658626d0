import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { ClusterDriversService } from '../cluster-drivers/cluster-drivers.service';
import { ClusterDriverResponse, CreateClusterDriverRequest, UpdateClusterDriverRequest } from '../cluster-drivers/dto/cluster-driver.dto';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, Page, PageQueryDto } from '../common/paging';
import { PlatformAdminOnly } from '../common/route-access';

const DRIVER_PARAM = { name: 'driver', example: 'example-driver', description: "The driver's name or identity (uuid)" };

/**
 * The registry of out-of-process cluster drivers (docs/drivers.md), for platform administrators. A cluster uses the
 * enabled driver registered for its cloud profile, else for its cloud provider, else the configured default driver.
 */
@ApiTags('Platform administration')
@PlatformAdminOnly()
@Controller('admin/v1/cluster-drivers')
export class ClusterDriversAdminController {
  constructor(private readonly drivers: ClusterDriversService) {}

  @Get()
  @ApiDoc({
    summary: 'Every registered cluster driver (page form A, by name)',
    description: 'Every registered cluster driver with what it serves, its limits and its last health check. The signing secret is never answered.',
  })
  @ApiPageResponse(ClusterDriverResponse, { form: 'A', sortable: ['name', 'createdAt', 'enabled'], defaultOrder: 'name' })
  @ApiStandardErrors({ notFound: false })
  list(@Query() query: PageQueryDto): Promise<Page<ClusterDriverResponse>> {
    return this.drivers.list(query);
  }

  @Post()
  @HttpCode(200)
  @ApiDoc({
    summary: 'Register an out-of-process cluster driver (audited CLUSTER_DRIVER_CREATED)',
    description:
      'Registers a driver speaking the cluster driver protocol v1 (docs/driver-protocol.openapi.json) at `url`, signed with ' +
      '`signingSecret`, for the cloud providers and/or cloud profiles it serves. The URL may point into a private network. ' +
      'Clusters of those providers or profiles go through it from the next reconciler step, on every replica. Nothing is ' +
      'called at registration: run the health check. Audited.',
    errors:
      '400 when a provider or profile is unknown, neither is given, or the URL or secret is malformed. 409 when the name is ' +
      'taken, or another enabled driver serves one of the providers or profiles.',
  })
  @ApiOkResponse({ type: ClusterDriverResponse })
  @ApiStandardErrors({ notFound: false, conflict: 'The name is taken, or another enabled driver serves one of its providers or profiles' })
  create(@Body() body: CreateClusterDriverRequest): Promise<ClusterDriverResponse> {
    return this.drivers.create(body);
  }

  @Get(':driver')
  @ApiDoc({ summary: 'A registered cluster driver', description: 'The driver with its last health check; never its signing secret.', errors: '404 when there is no such driver.' })
  @ApiParam(DRIVER_PARAM)
  @ApiOkResponse({ type: ClusterDriverResponse })
  @ApiStandardErrors({ badRequest: false })
  get(@Param('driver') driver: string): Promise<ClusterDriverResponse> {
    return this.drivers.get(driver);
  }

  @Patch(':driver')
  @ApiDoc({
    summary: 'Change a cluster driver: URL, secret, what it serves, limits, enabled (audited CLUSTER_DRIVER_UPDATED)',
    description:
      'Changes the given fields; the lists are replaced whole. A new `signingSecret` takes effect at once (configure the driver ' +
      'with it first). A change that changes nothing answers 200 and writes nothing. Audited.',
    errors:
      '404 when there is no such driver. 400 as for registration. 409 when another enabled driver serves one of the providers or ' +
      'profiles, or when the change (disabling, or dropping a provider or profile) would take clusters that are not deleted away from it.',
  })
  @ApiParam(DRIVER_PARAM)
  @ApiOkResponse({ type: ClusterDriverResponse })
  @ApiStandardErrors({ conflict: 'Another enabled driver serves one of its providers or profiles, or clusters would lose their driver' })
  update(@Param('driver') driver: string, @Body() body: UpdateClusterDriverRequest): Promise<ClusterDriverResponse> {
    return this.drivers.update(driver, body);
  }

  @Delete(':driver')
  @HttpCode(204)
  @ApiDoc({
    summary: 'Remove a cluster driver from the registry (audited CLUSTER_DRIVER_DELETED)',
    description: 'Removes the registration; the driver itself is not called. Audited.',
    errors: '404 when there is no such driver. 409 while it is enabled and serves clusters that are not deleted.',
  })
  @ApiParam(DRIVER_PARAM)
  @ApiNoContentResponse({ description: 'Removed' })
  @ApiStandardErrors({ badRequest: false, conflict: 'It serves clusters that are not deleted' })
  delete(@Param('driver') driver: string): Promise<void> {
    return this.drivers.delete(driver);
  }

  @Post(':driver/health-check')
  @HttpCode(200)
  @ApiDoc({
    summary: "Check a cluster driver's health: call its capabilities and record the result (audited CLUSTER_DRIVER_HEALTH_CHECKED)",
    description:
      "Calls the driver's signed `GET /v1/capabilities` within its timeout and records HEALTHY with what it answered (protocol " +
      'version, name and version, providers, features), or UNHEALTHY with the reason (unreachable, timeout, signature refused, ' +
      'another protocol version). Answers the driver with its health. Audited.',
    errors: '404 when there is no such driver.',
  })
  @ApiParam(DRIVER_PARAM)
  @ApiOkResponse({ type: ClusterDriverResponse })
  @ApiStandardErrors({ badRequest: false })
  healthCheck(@Param('driver') driver: string): Promise<ClusterDriverResponse> {
    return this.drivers.healthCheck(driver);
  }
}
