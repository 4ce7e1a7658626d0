import * as fs from 'fs';
import * as path from 'path';

/**
 * The Node.js flags `npm start` runs the service with (package.json `config.nodeFlags`), so benchmarks measure the
 * same process; BENCH_SERVICE_NODE_FLAGS overrides them to compare settings.
 */
export const SERVICE_NODE_FLAGS: string[] = (
  process.env.BENCH_SERVICE_NODE_FLAGS ??
  (JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', 'package.json'), 'utf8')) as { config?: { nodeFlags?: string } }).config?.nodeFlags ?? ''
)
  .split(/\s+/)
  .filter(Boolean);
