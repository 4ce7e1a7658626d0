import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsBoolean, IsOptional } from 'class-validator';
import { PlatformAdminOnly } from '../auth/principal';
import { ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { QueryBoolean } from '../clusters/dto/validators';
import { ClustersQueryService } from '../clusters/clusters-query.service';
import { ClusterResponse } from '../clusters/dto/cluster.dto';

export class AdminClusterListQuery extends PageQueryDto {
  @ApiPropertyOptional({ default: false, description: 'true adds actualState' })
  @IsOptional() @QueryBoolean() @IsBoolean({ message: 'includeDetails must be true or false' })
  includeDetails?: boolean;

  @ApiPropertyOptional({ name: 'show-compute', default: true, description: 'false leaves cpu and memory empty' })
  @IsOptional() @QueryBoolean() @IsBoolean({ message: 'show-compute must be true or false' })
  'show-compute'?: boolean;

  @ApiPropertyOptional({ default: true, description: 'false also lists deleted clusters (with deletedAt)' })
  @IsOptional() @QueryBoolean() @IsBoolean({ message: 'hideDeleted must be true or false' })
  hideDeleted?: boolean;
}

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
  list(@Query() query: AdminClusterListQuery) {
    return this.queries.listAll(query);
  }
}
