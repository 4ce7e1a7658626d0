import * as fs from 'fs';
import * as path from 'path';

/**
 * The example driver's state on disk: one JSON document, replaced atomically (written to a temporary file in the same
 * folder, flushed, renamed over the old one, folder flushed), so a crash at any moment leaves either the old state or
 * the new one, never half of one.
 */
export function readState<T>(file: string): T | null {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as T;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new Error(`The state file ${file} could not be read: ${(e as Error).message}`);
  }
}

export function writeStateAtomically(file: string, state: unknown): void {
  const dir = path.dirname(path.resolve(file));
  fs.mkdirSync(dir, { recursive: true });
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.tmp`);
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.writeSync(fd, JSON.stringify(state));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  try {
    const dfd = fs.openSync(dir, 'r');
    fs.fsyncSync(dfd);
    fs.closeSync(dfd);
  } catch {
    // Flushing a folder is not supported everywhere; the rename itself is atomic.
  }
}
