import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { ServiceState } from './service-state';
import { Public } from '../common/route-access';
import { ApiDoc } from '../common/api-docs';

@ApiTags('Health')
@Public()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    private readonly state: ServiceState,
    private readonly indicators: HealthIndicatorService,
  ) {}

  @Get()
  @ApiDoc({
    summary: 'Liveness: the process is up',
    description: 'Needs no database. With the embedded database, 503 while its PostgreSQL process is down (it is restarted).',
  })
  @ApiOkResponse({ schema: { example: { status: 'ok' } } })
  @ApiServiceUnavailableResponse({ description: 'The embedded PostgreSQL process is down' })
  live() {
    if (this.state.embedded && !this.state.embedded.running) {
      throw new ServiceUnavailableException('The embedded PostgreSQL process is down; it is being restarted.');
    }
    return { status: 'ok' };
  }

  @Get('ready')
  @HealthCheck()
  @ApiDoc({
    summary: 'Readiness: the database answers and the instance is not shutting down',
    description:
      'The 503 body names the failing check in `error`: `database`, `shutdown` while draining, or, while the process ' +
      'starts, `startup` or `schema` (the database lacks migrations of this release and the process waits for the ' +
      'migration Job; `message` says which).',
  })
  @ApiServiceUnavailableResponse({ description: 'The database is unreachable, the instance is draining, or it is still starting (waiting for its schema)' })
  ready() {
    return this.health.check([
      () => {
        const shutdown = this.indicators.check('shutdown');
        return this.state.draining ? shutdown.down({ message: 'this instance is shutting down' }) : shutdown.up();
      },
      () => this.db.pingCheck('database', { timeout: 1500 }),
    ]);
  }
}
