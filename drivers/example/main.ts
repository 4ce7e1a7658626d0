import { parseArgs } from 'util';
import { ExampleDriverServer } from './server';

/**
 * npm run driver:example -- --port 9100 --secret whsec_... --state-file ./example-driver.json [--step-ms 1000]
 *   [--host 127.0.0.1] [--latency-ms 0] [--fault-delay-ms 10000] [--ignore-idempotency-keys]
 * The secret may also come from EXAMPLE_DRIVER_SECRET (so it stays out of the process list).
 * --ignore-idempotency-keys makes the driver deliberately wrong (the conformance kit's negative test).
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '9100' },
      host: { type: 'string', default: '127.0.0.1' },
      secret: { type: 'string' },
      'state-file': { type: 'string', default: 'example-driver-state.json' },
      'step-ms': { type: 'string', default: '1000' },
      'fault-delay-ms': { type: 'string', default: '10000' },
      'latency-ms': { type: 'string', default: '0' },
      'ignore-idempotency-keys': { type: 'boolean', default: false },
    },
  });
  const secret = values.secret ?? process.env.EXAMPLE_DRIVER_SECRET;
  if (!secret) throw new Error('--secret (or EXAMPLE_DRIVER_SECRET) is required: the Standard Webhooks secret registered with the service');
  const server = new ExampleDriverServer({
    port: Number(values.port),
    host: values.host,
    secret,
    stateFile: values['state-file']!,
    stepMs: Number(values['step-ms']),
    faultDelayMs: Number(values['fault-delay-ms']),
    latencyMs: Number(values['latency-ms']),
    ignoreIdempotencyKeys: values['ignore-idempotency-keys'],
  });
  const port = await server.start();
  process.stdout.write(`example driver listening on http://${values.host}:${port} (state ${values['state-file']})\n`);
  const stop = () => void server.stop().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).message}\n`);
  process.exit(1);
});
