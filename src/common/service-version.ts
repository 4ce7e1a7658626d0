import * as fs from 'fs';
import * as path from 'path';

/** The version in the project's package.json (found from src/ and from dist/src/ alike): metrics and the OpenAPI document. */
function readServiceVersion(): string {
  for (let dir = __dirname, i = 0; i < 5; i++, dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version?: string }).version ?? 'unknown';
  }
  return 'unknown';
}

export const SERVICE_VERSION = readServiceVersion();
