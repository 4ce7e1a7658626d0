import { createApp } from '../src/app.factory';
import { loadConfig } from '../src/config/app-config';
import { WebhookDeliveryWorker } from '../src/webhooks/webhook-delivery.worker';

/**
 * One delivery replica for the webhook benchmark: the real application (same modules, same worker) with
 * the other background loops off, draining the outbox continuously until it receives SIGTERM.
 */
async function main(): Promise<void> {
  const running = await createApp(loadConfig({ ...process.env, BACKGROUND_JOBS_ENABLED: 'false' }), { quiet: true });
  const worker = running.app.get(WebhookDeliveryWorker);
  let stop = false;
  process.on('SIGTERM', () => (stop = true));
  process.stdout.write('ready\n');
  while (!stop) {
    if ((await worker.drain()) === 0) await new Promise((r) => setTimeout(r, 10));
  }
  await running.close();
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
