import { ChildProcess, spawn } from 'child_process';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '../..');

/** The example driver (npm run driver:example) as a separate process on a free port; `url` once it listens. */
export async function startExampleDriver(opts: { secret: string; stateFile: string; stepMs?: number; extra?: string[] }): Promise<{ url: string; process: ChildProcess; stop: (signal?: NodeJS.Signals) => Promise<void> }> {
  const child = spawn(
    process.execPath,
    ['-r', '@swc-node/register', 'drivers/example/main.ts', '--port', '0', '--state-file', opts.stateFile, '--step-ms', String(opts.stepMs ?? 50), '--fault-delay-ms', '3000', ...(opts.extra ?? [])],
    { cwd: ROOT, env: { ...process.env, EXAMPLE_DRIVER_SECRET: opts.secret, NODE_OPTIONS: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const m = /listening on (http:\/\/[^\s]+)/.exec(output);
      if (m) resolve(m[1]);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the example driver exited (${code}) before listening: ${output}`)));
  });
  const stop = (signal: NodeJS.Signals = 'SIGTERM') =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  return { url, process: child, stop };
}

/** Runs `npm run driver:conformance` as its own process; answers its exit code and output. */
export function runConformanceCli(url: string, secret: string, waitSeconds = 30): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', 'drivers/conformance/main.ts', '--url', url, '--wait-seconds', String(waitSeconds)], {
      cwd: ROOT,
      env: { ...process.env, DRIVER_SECRET: secret, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.on('exit', (code) => resolve({ code, output }));
  });
}
