import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { PlatformAdminOnly } from '../auth/principal';
import { ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse } from '../common/paging';
import { ClustersQueryService } from '../clusters/clusters-query.service';
import { ClusterOrgListQuery, ClusterResponse } from '../clusters/dto/cluster.dto';

/** Platform operators' view of every organisation's clusters (registered by ClustersModule). */
@ApiTags('Admin')
@Controller('admin/v1/clusters')
@PlatformAdminOnly()
export class ClustersAdminController {
  constructor(private readonly queries: ClustersQueryService) {}

  @Get()
  @ApiOperation({ summary: 'List all clusters of all organisations (platform administrators only)' })
  @ApiPageResponse(ClusterResponse, 'B')
  @ApiStandardErrors({ notFound: false })
  list(@Query() query: ClusterOrgListQuery) {
    return this.queries.listAll(query);
  }
}
