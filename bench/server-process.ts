import { ChildProcess, spawn } from 'child_process';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '..');

/**
 * Starts a Node.js server process from the project root and waits until `healthPath` answers 2xx (at most
 * two minutes); rejects with the process's output when it exits or does not come up.
 */
export async function spawnServer(
  label: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  port: number,
  healthPath = '/health/ready',
): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}${healthPath}`)).ok) return child;
    } catch {
      /* not up yet */
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${label} did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
