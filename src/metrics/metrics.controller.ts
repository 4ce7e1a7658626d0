import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { MetricsTokenAccepted, PlatformAdminOnly } from '../common/route-access';
import { MetricsService } from './metrics.service';

/**
 * Prometheus scrape endpoint; kept out of the API document. Not public: it answers to
 * `Authorization: Bearer <METRICS_TOKEN>` or to a platform administrator's credential.
 */
@ApiExcludeController()
@MetricsTokenAccepted()
@PlatformAdminOnly()
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    return this.metrics.scrape();
  }
}
