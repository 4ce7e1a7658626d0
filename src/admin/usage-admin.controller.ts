import { Controller, Get, Query, StreamableFile } from '@nestjs/common';
import { ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { PlatformAdminOnly } from '../common/route-access';
import { UsageExportQuery } from '../metering/dto/usage-export.dto';
import { focusResponseContent, UsageExportService } from '../metering/usage-export.service';

/** The platform-wide FOCUS export (docs/metering.md), for platform administrators (everyone else 403). */
@ApiTags('Platform administration')
@PlatformAdminOnly()
@Controller('admin/v1/usage')
export class UsageAdminController {
  constructor(private readonly exports: UsageExportService) {}

  @Get('export')
  @ApiDoc({
    summary: "Every organisation's charges of a month as a FOCUS 1.1 export (CSV or JSON)",
    description:
      'The FOCUS rows of every organisation for the calendar month (UTC), organisation after organisation, each as its ' +
      'own export answers it (BillingAccountId is the organisation). Streamed as it is read.',
    errors: '400 when period or format is missing or malformed. 404 when the period has not begun.',
  })
  @ApiOkResponse({ description: 'The FOCUS rows', content: focusResponseContent() as never })
  @ApiStandardErrors()
  export(@Query() query: UsageExportQuery): Promise<StreamableFile> {
    return this.exports.export(null, query.period, query.format);
  }
}
