import { HttpException, HttpStatus, Injectable, OnModuleDestroy } from '@nestjs/common';
import * as path from 'path';
import { Worker } from 'worker_threads';
import { TooManyRequestsException } from '../auth/request-rate-limits';
import { AlertingFilesInput, AlertingProblem } from './alerting-validation';

/** How long one check may take before its worker is stopped and the configuration refused. */
const CHECK_TIMEOUT_MS = 10_000;
/** Checks one principal may have waiting or running at once. */
const PER_PRINCIPAL = 2;

interface Pending {
  resolve(problems: AlertingProblem[]): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * Parses and checks alerting YAML in a worker thread, so a large or crafted document (up to the size
 * bounds) costs its caller time, not every tenant's: `/health` and other requests stay on an idle event
 * loop. One worker, checks queued in order; a principal may have at most PER_PRINCIPAL checks queued (429
 * beyond); a check running longer than CHECK_TIMEOUT_MS stops the worker (a fresh one starts for the next).
 */
@Injectable()
export class AlertingChecker implements OnModuleDestroy {
  private worker?: Worker;
  private seq = 0;
  private readonly pending = new Map<number, Pending>();
  private readonly perPrincipal = new Map<string, number>();

  async check(input: AlertingFilesInput, principalKey: string): Promise<AlertingProblem[]> {
    const inFlight = this.perPrincipal.get(principalKey) ?? 0;
    if (inFlight >= PER_PRINCIPAL) {
      throw new TooManyRequestsException('Alerting configuration checks of this caller are already running; retry when they finish.', 1000);
    }
    this.perPrincipal.set(principalKey, inFlight + 1);
    try {
      return await this.run(input);
    } finally {
      const left = (this.perPrincipal.get(principalKey) ?? 1) - 1;
      if (left <= 0) this.perPrincipal.delete(principalKey);
      else this.perPrincipal.set(principalKey, left);
    }
  }

  private run(input: AlertingFilesInput): Promise<AlertingProblem[]> {
    const worker = this.ensureWorker();
    const id = ++this.seq;
    return new Promise<AlertingProblem[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new HttpException('The alerting configuration is too complex to check in time; simplify it.', HttpStatus.BAD_REQUEST));
        this.restart();
      }, CHECK_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      worker.postMessage({ id, input: { alertingConfig: input.alertingConfig, ruleFiles: input.ruleFiles, templateFiles: input.templateFiles } });
    });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    // Built code runs the compiled worker; tests and `start:dev` run TypeScript through swc's register hook.
    const compiled = __filename.endsWith('.js');
    const file = path.join(__dirname, `alerting-validation.worker.${compiled ? 'js' : 'ts'}`);
    const worker = new Worker(file, compiled ? {} : { execArgv: ['--require', '@swc-node/register'] });
    worker.unref();
    worker.on('message', (m: { id: number; problems?: AlertingProblem[]; error?: string }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.error !== undefined) p.reject(new Error(`alerting check failed: ${m.error}`));
      else p.resolve(m.problems ?? []);
    });
    worker.on('error', (e) => this.failAll(e));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = undefined;
      this.failAll(new Error('alerting check worker stopped'));
    });
    this.worker = worker;
    return worker;
  }

  private restart(): void {
    const w = this.worker;
    this.worker = undefined;
    void w?.terminate();
  }

  private failAll(e: Error): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(e);
      this.pending.delete(id);
    }
  }

  async onModuleDestroy(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
  }
}
