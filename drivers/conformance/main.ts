import { parseArgs } from 'util';
import { renderTable, runConformance } from './kit';

/**
 * npm run driver:conformance -- --url http://127.0.0.1:9100 --secret whsec_... [--timeout-ms 5000] [--wait-seconds 120]
 * Runs the cluster driver protocol's conformance scenarios against a driver and prints a pass/fail table; the exit
 * code is 1 when a scenario failed (skipped ones, for optional features the driver does not declare, do not fail).
 * The secret may also come from DRIVER_SECRET.
 */
async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      secret: { type: 'string' },
      'timeout-ms': { type: 'string', default: '5000' },
      'wait-seconds': { type: 'string', default: '120' },
      'poll-ms': { type: 'string', default: '200' },
    },
  });
  const secret = values.secret ?? process.env.DRIVER_SECRET;
  if (!values.url || !secret) {
    process.stderr.write('usage: npm run driver:conformance -- --url <driver base URL> --secret <whsec_...> [--timeout-ms 5000] [--wait-seconds 120]\n');
    return 2;
  }
  const results = await runConformance({
    url: values.url,
    secret,
    timeoutMs: Number(values['timeout-ms']),
    waitSeconds: Number(values['wait-seconds']),
    pollMs: Number(values['poll-ms']),
  });
  process.stdout.write(`${renderTable(results)}\n`);
  return results.some((r) => r.outcome === 'fail') ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(2);
  },
);
