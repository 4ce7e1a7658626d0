import { Injectable, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { BackgroundJob, JobSchedule } from './background-job';
import { JobLoop } from './job-loop';
import { NotifyListener } from './notify-listener';

/**
 * The manager of every background loop of this replica: a job registers itself (in its constructor) and gets
 * its `JobLoop`; after bootstrap the loops start when BACKGROUND_JOBS_ENABLED (a loop registered later starts at
 * once); at shutdown every loop finishes its pass under way before the database pool closes (this runs in
 * onModuleDestroy; TypeORM closes the pool in onApplicationShutdown, which comes after).
 */
@Injectable()
export class BackgroundJobs implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly loops: JobLoop<unknown>[] = [];
  private listener: NotifyListener | null = null;
  private running = false;

  constructor(
    private readonly config: AppConfig,
    private readonly metrics: MetricsService,
    private readonly dataSource: DataSource,
    private readonly registry: SchedulerRegistry,
  ) {}

  register<R>(job: BackgroundJob<R>, schedule: JobSchedule<R>): JobLoop<R> {
    if (this.loops.some((l) => l.name === schedule.name)) throw new Error(`A background job named ${schedule.name} is registered already`);
    const loop = new JobLoop(job, schedule, this.metrics);
    this.loops.push(loop as JobLoop<unknown>);
    if (this.running) this.start(loop as JobLoop<unknown>);
    return loop;
  }

  onApplicationBootstrap(): void {
    if (!this.config.BACKGROUND_JOBS_ENABLED) return;
    this.running = true;
    for (const loop of this.loops) this.start(loop);
  }

  async onModuleDestroy(): Promise<void> {
    this.running = false;
    await this.listener?.close();
    await Promise.all(this.loops.map((loop) => loop.stop()));
  }

  private start(loop: JobLoop<unknown>): void {
    loop.start(this.registry);
    const channel = loop.schedule.listen;
    if (!channel) return;
    this.listener ??= new NotifyListener((this.dataSource.options as { url?: string }).url, { metrics: this.metrics });
    this.listener.add(channel, () => loop.wake());
  }
}
