import * as fs from 'fs';
import * as path from 'path';

/** The example driver's state on disk: one JSON document, replaced atomically. */
export function readState<T>(file: string): T | null {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as T;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new Error(`The state file ${file} could not be read: ${(e as Error).message}`);
  }
}

/**
 * Replaces the state file with `text` atomically without blocking the event loop: a temporary file in the same folder,
 * flushed, renamed over the old one; a crash at any moment leaves either the old state or the new one.
 */
export async function writeTextAtomically(file: string, text: string): Promise<void> {
  const dir = path.dirname(path.resolve(file));
  await fs.promises.mkdir(dir, { recursive: true });
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.tmp`);
  const handle = await fs.promises.open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.promises.rename(tmp, file);
}
