import 'reflect-metadata';
// First: tracing instruments http, pg, undici and pino, so it starts before they are loaded (off without an OTLP endpoint).
import { tracing } from './tracing';
import * as fs from 'fs';
import * as path from 'path';
import { createApp, RunningApp } from './app.factory';
import { BootstrapAdminService } from './auth/bootstrap-admin.service';
import { DemoDataService } from './demo/demo-data.service';
import { AppConfig, ConfigValidationError, loadConfig } from './config/app-config';
import { StartupGate } from './health/startup-gate';
import { processLogger } from './logging';

/** How long start-up may take to unwind after a signal before the process exits anyway. */
const STARTUP_ABORT_BOUND_MS = 10_000;

/** Start-up ended by a signal (the reason the start-up signal is aborted with). */
class StartupAborted extends Error {}

async function main(): Promise<void> {
  // Signals are handled from the first line: a SIGTERM while the process starts (waiting for the database, for the
  // migration lock, ...) ends the start-up where it waits; once it serves, it drains and stops (stop below).
  const log = processLogger();
  const startup = new AbortController();
  let config: AppConfig | undefined;
  let running: RunningApp | undefined;
  let stopping = false;
  const stop = async (signal: string, app: RunningApp, settings: AppConfig) => {
    log.info({ signal }, `${signal} received: finishing in-flight requests and stopping`);
    // Draining (delay and grace), then the background passes, the pool and the embedded database: 5 s for those.
    const timer = setTimeout(() => {
      log.error('Shutdown took too long; exiting');
      process.exit(1);
    }, settings.SHUTDOWN_DELAY_MS + settings.SHUTDOWN_GRACE_MS + 5000);
    timer.unref();
    try {
      await app.close();
      await tracing?.shutdown().catch(() => undefined);
      log.info('Stopped');
      process.exit(0);
    } catch (e) {
      log.error({ err: e }, `Error during shutdown: ${(e as Error).message}`);
      process.exit(1);
    }
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    if (running && config) {
      void stop(signal, running, config);
      return;
    }
    log.info({ signal }, `${signal} received during start-up: stopping`);
    startup.abort(new StartupAborted(`${signal} received during start-up`));
    const timer = setTimeout(() => {
      log.error('Start-up did not stop in time; exiting');
      process.exit(1);
    }, STARTUP_ABORT_BOUND_MS);
    timer.unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigValidationError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  // Until the application listens, its address answers the health endpoints: alive, not ready, and why.
  const gate = new StartupGate();
  await gate.open(config.PORT, config.HOST);
  try {
    running = await createApp(config, {
      signal: startup.signal,
      onSchemaWait: (reason) => {
        gate.waitingFor('schema', reason);
        log.warn({ reason }, `Waiting for the database schema: ${reason}`);
      },
    });
  } catch (e) {
    await gate.close();
    if (startup.signal.aborted) {
      log.info('Stopped during start-up');
      process.exit(0);
    }
    throw e;
  }
  await gate.close();
  if (stopping) {
    // The signal came after the last place start-up waits for it: close what has started, serving nothing.
    await running.close();
    log.info('Stopped during start-up');
    process.exit(0);
  }
  await running.app.listen({ port: config.PORT, host: config.HOST });
  const base = `http://${config.HOST === '0.0.0.0' ? 'localhost' : config.HOST}:${config.PORT}`;
  // The last lines of the start-up output: where to click and how to log in.
  const lines = [
    `Cluster Management Service (Node.js ${process.version}) listening on ${base}`,
    `  OpenAPI:    ${base}/v3/api-docs`,
    `  Swagger UI: ${base}/swagger-ui`,
  ];
  // The demo organisation (a fresh install, DEMO_DATA), then how to log in: the token comes last.
  const demo = running.app.get(DemoDataService).startupNotice;
  if (demo) lines.push(demo);
  const notice = running.app.get(BootstrapAdminService).startupNotice;
  if (notice) lines.push(notice);
  else if (config.embeddedDatabase) {
    const tokenFile = path.resolve(config.DATA_DIR, 'admin-token');
    if (fs.existsSync(tokenFile)) lines.push(`  Admin token: ${tokenFile} (use it as Authorization: Token <token>)`);
  } else if (config.BOOTSTRAP_ADMIN_TOKEN_FILE) {
    lines.push(`  Admin token (first start): ${config.BOOTSTRAP_ADMIN_TOKEN_FILE}`);
  }
  // Log lines are written asynchronously (pino); let them out first so these lines really come last.
  await new Promise((r) => setTimeout(r, 100));
  // One JSON line per line of text, so they read in order in a terminal too.
  for (const line of lines.join('\n').split('\n')) log.info(line);
}

main().catch((e: unknown) => {
  if (e instanceof ConfigValidationError) {
    process.stderr.write(`${e.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`Start-up failed: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exit(1);
});
