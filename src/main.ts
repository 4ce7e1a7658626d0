import 'reflect-metadata';
import { createApp } from './app.factory';
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
  process.stdout.write(`Cluster Management Service listening on ${base}\n  Swagger UI: ${base}/swagger-ui\n  OpenAPI:    ${base}/v3/api-docs\n`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`${signal} received: finishing in-flight requests and stopping\n`);
    const timer = setTimeout(() => {
      process.stderr.write('Shutdown took too long; exiting\n');
      process.exit(1);
    }, config.SHUTDOWN_GRACE_MS + 5000);
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
