import { ChildProcess, spawn, SpawnOptions } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

/**
 * The failover test's scratch directory and the daemons it starts, so that nothing outlives the run: every process is
 * recorded (with the directory's path, which its command line or working directory shows) in `state.json`, stopped in
 * order at the end, killed by the exit handler if the run dies, and reaped by the next run if the run itself was killed.
 */

export const SCRATCH_PREFIX = 'cms-failover-';

export interface TrackedProcess {
  name: string;
  pid: number;
  /** A text the process's /proc/PID/cmdline contains, so a recycled PID is never signalled. */
  marker: string;
  child?: ChildProcess;
}

interface ScratchState {
  ownerPid: number;
  /** The owner's start time (clock ticks after boot), so that a recycled PID is not taken for the owner. */
  ownerStart?: string;
  processes: { name: string; pid: number; marker: string }[];
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The command line of a process, or undefined when it is gone. */
export function commandLine(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return undefined;
  }
}

/** Alive and not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** A process's start time in clock ticks after boot (/proc/PID/stat field 22), undefined when it is gone. */
export function startTime(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** Every process below `pid` (children, grandchildren, ...), read from /proc. */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      /* gone meanwhile */
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      found.push(c);
      walk(c);
    }
  };
  walk(pid);
  return found;
}

/** Sends a signal if the PID still belongs to the process we started (its command line contains the marker). */
export function signalOwned(proc: { pid: number; marker: string }, signal: NodeJS.Signals): boolean {
  const cmd = commandLine(proc.pid);
  if (cmd === undefined || !cmd.includes(proc.marker)) return false;
  try {
    process.kill(proc.pid, signal);
    return true;
  } catch {
    return false;
  }
}

export class Scratch {
  readonly dir: string;
  private readonly tracked: TrackedProcess[] = [];
  /** PostgreSQL data directories: their postmaster.pid names the postmaster Patroni started (it is not our child). */
  private readonly dataDirs: string[] = [];
  private removed = false;

  constructor() {
    reapStaleRuns();
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), SCRATCH_PREFIX));
    // PostgreSQL runs as another user when we are root: it must be able to reach its directory below this one.
    fs.chmodSync(this.dir, 0o755);
    this.save();
    process.on('exit', () => this.killAllNow());
  }

  path(...parts: string[]): string {
    return path.join(this.dir, ...parts);
  }

  addDataDir(dir: string): void {
    this.dataDirs.push(dir);
    this.save();
  }

  /**
   * Starts a daemon in its own process group (a Ctrl-C reaches only the test, which stops it in order), its output
   * appended to `logFile`.
   */
  spawnDaemon(name: string, command: string, args: string[], logFile: string, options: SpawnOptions = {}): TrackedProcess {
    const out = fs.openSync(logFile, 'a');
    const child = spawn(command, args, { detached: true, stdio: ['ignore', out, out], ...options });
    fs.closeSync(out);
    if (child.pid === undefined) throw new Error(`${name} did not start (${command})`);
    child.on('error', () => undefined);
    return this.track(name, child, args.find((a) => a.includes(this.dir)) ?? command);
  }

  track(name: string, child: ChildProcess, marker: string): TrackedProcess {
    const proc: TrackedProcess = { name, pid: child.pid!, marker, child };
    this.tracked.push(proc);
    this.save();
    return proc;
  }

  /** The postmasters running on our data directories (read from their postmaster.pid). */
  postmasters(): { pid: number; marker: string }[] {
    return this.dataDirs.flatMap((dir) => {
      const pid = postmasterPid(dir);
      return pid ? [{ pid, marker: dir }] : [];
    });
  }

  /** Stops everything (SIGCONT first: a frozen process cannot act on SIGTERM), waiting up to `graceMs` each round. */
  async stopAll(order: string[][], graceMs = 20_000): Promise<void> {
    for (const p of [...this.tracked, ...this.postmasters()]) {
      signalOwned(p, 'SIGCONT');
      for (const d of descendants(p.pid)) safeKill(d, 'SIGCONT');
    }
    for (const names of order) {
      const group = this.tracked.filter((p) => names.includes(p.name) && isAlive(p.pid));
      for (const p of group) signalOwned(p, 'SIGTERM');
      const deadline = Date.now() + graceMs;
      while (group.some((p) => isAlive(p.pid)) && Date.now() < deadline) await sleep(200);
      for (const p of group) signalOwned(p, 'SIGKILL');
      // Patroni stops its PostgreSQL on SIGTERM; one it could not stop is stopped here.
      if (names.some((n) => n.startsWith('patroni'))) {
        const left = this.postmasters().filter((p) => signalOwned(p, 'SIGTERM'));
        const until = Date.now() + 10_000;
        while (left.some((p) => isAlive(p.pid)) && Date.now() < until) await sleep(200);
        for (const p of left) signalOwned(p, 'SIGKILL');
      }
    }
    this.killAllNow();
  }

  /** Last resort (also the exit handler): SIGKILL whatever is still running, then remove the directory. */
  killAllNow(): void {
    for (const p of [...this.tracked, ...this.postmasters()]) {
      signalOwned(p, 'SIGCONT');
      signalOwned(p, 'SIGKILL');
    }
    this.remove();
  }

  remove(): void {
    if (this.removed) return;
    if (process.env.FAILOVER_KEEP_SCRATCH === '1') {
      // Everything is stopped: without its state.json the next run's reaper leaves the kept directory alone.
      fs.rmSync(path.join(this.dir, 'state.json'), { force: true });
      return;
    }
    try {
      fs.rmSync(this.dir, { recursive: true, force: true });
      this.removed = true;
    } catch {
      /* a process still writing: the next run reaps it */
    }
  }

  private save(): void {
    const state: ScratchState & { dataDirs: string[] } = {
      ownerPid: process.pid,
      ownerStart: startTime(process.pid),
      processes: this.tracked.map(({ name, pid, marker }) => ({ name, pid, marker })),
      dataDirs: this.dataDirs,
    };
    fs.writeFileSync(path.join(this.dir, 'state.json'), JSON.stringify(state, null, 2));
  }
}

export function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function safeKill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* gone */
  }
}

/** A run that was itself killed (SIGKILL) left its daemons: kill those still running and remove its directory. */
function reapStaleRuns(): void {
  for (const entry of fs.readdirSync(os.tmpdir())) {
    if (!entry.startsWith(SCRATCH_PREFIX)) continue;
    const dir = path.join(os.tmpdir(), entry);
    let state: ScratchState & { dataDirs?: string[] };
    try {
      state = JSON.parse(fs.readFileSync(path.join(dir, 'state.json'), 'utf8'));
    } catch {
      continue;
    }
    if (isAlive(state.ownerPid) && (state.ownerStart === undefined || startTime(state.ownerPid) === state.ownerStart)) continue;
    const postmasters = (state.dataDirs ?? []).flatMap((d) => {
      const pid = postmasterPid(d);
      return pid ? [{ pid, marker: d }] : [];
    });
    for (const p of [...state.processes, ...postmasters]) {
      signalOwned(p, 'SIGCONT');
      if (signalOwned(p, 'SIGKILL')) process.stdout.write(`reaped ${'name' in p ? p.name : 'postmaster'} ${p.pid} left by an earlier run in ${dir}\n`);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
