import 'reflect-metadata';
import * as fs from 'fs';
import * as path from 'path';
import { createApp } from './app.factory';
import { BootstrapAdminService } from './auth/bootstrap-admin.service';
import { DemoDataService } from './demo/demo-data.service';
import { ConfigValidationError, loadConfig } from './config/app-config';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigValidationError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const running = await createApp(config);
  await running.app.listen({ port: config.PORT, host: config.HOST });
  const base = `http://${config.HOST === '0.0.0.0' ? 'localhost' : config.HOST}:${config.PORT}`;
  // The last lines of the start-up output: where to click and how to log in.
  const lines = [
    '',
    `Cluster Management Service (Node.js ${process.version}) listening on ${base}`,
    `  OpenAPI:    ${base}/v3/api-docs`,
    `  Swagger UI: ${base}/swagger-ui`,
  ];
  // The demo organisation (a fresh install, DEMO_DATA), then how to log in: the token comes last.
  const demo = running.app.get(DemoDataService).startupNotice;
  if (demo) lines.push('', demo);
  const notice = running.app.get(BootstrapAdminService).startupNotice;
  if (notice) lines.push('', notice);
  else if (config.embeddedDatabase) {
    const tokenFile = path.resolve(config.DATA_DIR, 'admin-token');
    if (fs.existsSync(tokenFile)) lines.push(`  Admin token: ${tokenFile} (use it as Authorization: Token <token>)`);
  } else if (config.BOOTSTRAP_ADMIN_TOKEN_FILE) {
    lines.push(`  Admin token (first start): ${config.BOOTSTRAP_ADMIN_TOKEN_FILE}`);
  }
  // Log lines are written asynchronously (pino); let them out first so these lines really come last.
  await new Promise((r) => setTimeout(r, 100));
  process.stdout.write(`${lines.join('\n')}\n`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`${signal} received: finishing in-flight requests and stopping\n`);
    // Draining (delay and grace), then the background passes, the pool and the embedded database: 5 s for those.
    const timer = setTimeout(() => {
      process.stderr.write('Shutdown took too long; exiting\n');
      process.exit(1);
    }, config.SHUTDOWN_DELAY_MS + config.SHUTDOWN_GRACE_MS + 5000);
    timer.unref();
    try {
      await running.close();
      process.exit(0);
    } catch (e) {
      process.stderr.write(`Error during shutdown: ${(e as Error).message}\n`);
      process.exit(1);
    }
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((e: unknown) => {
  if (e instanceof ConfigValidationError) {
    process.stderr.write(`${e.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`Start-up failed: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exit(1);
});
