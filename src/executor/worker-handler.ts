import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import type { MessagePort } from 'worker_threads';
import { workerData } from 'piscina';
import type { ExecutorThreadPriority } from '../config/executor-thread-priority';

/**
 * How the executor's worker threads yield the CPU to the event loop (EXECUTOR_THREAD_PRIORITY):
 * - `idle`: Linux's SCHED_IDLE policy, set with util-linux's `chrt`: a thread that runs only when no other thread of
 *   normal priority wants the CPU, and is preempted at once when one wakes up (the event loop answering a request);
 *   where `chrt` or the policy is missing, the lowest niceness instead;
 * - `low`: niceness 10 (the CPU is shared by weight: about a tenth for the worker when both want it);
 * - `normal`: the process's own priority.
 */
/** The key of piscina's `workerData` that carries the priority to the threads. */
export const THREAD_PRIORITY_KEY = 'threadPriority';

const NICENESS = { low: 10, lowest: 19 } as const;
/** SCHED_IDLE's number in /proc/<pid>/task/<tid>/stat's `policy` field. */
const SCHED_IDLE = 5;

/** The calling thread's id, scheduling policy and niceness, from /proc (Linux only). */
export function threadScheduling(): { tid: number; policy: number; nice: number } | null {
  try {
    const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
    const stat = fs.readFileSync('/proc/thread-self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields after the command: state is the 3rd of stat (index 0 here); nice the 19th, policy the 41st.
    return { tid, nice: Number(fields[16]), policy: Number(fields[38]) };
  } catch {
    return null;
  }
}

/**
 * Lowers this thread's CPU priority as `priority` says (a Linux thread is a task with its own policy and niceness,
 * set through its thread id), so that on a busy machine the expensive work on user input yields the CPU to the event
 * loop, which answers every other request. Best effort: elsewhere, or without /proc, the thread keeps the process's
 * priority. Returns what the thread runs at.
 */
export function lowerThreadPriority(priority: ExecutorThreadPriority): 'idle' | 'low' | 'lowest' | 'normal' {
  const self = threadScheduling();
  if (!self || self.tid === process.pid || priority === 'normal') return 'normal';
  if (priority === 'idle') {
    // Lowering one's own policy to SCHED_IDLE needs no privilege; chrt is part of util-linux (every Debian image).
    const chrt = spawnSync('chrt', ['--idle', '--pid', '0', String(self.tid)], { stdio: 'ignore', timeout: 5000 });
    if (chrt.status === 0 && threadScheduling()?.policy === SCHED_IDLE) return 'idle';
  }
  const niceness = priority === 'idle' ? NICENESS.lowest : NICENESS.low;
  try {
    os.setPriority(self.tid, niceness);
    if (os.getPriority(self.tid) === niceness) return priority === 'idle' ? 'lowest' : 'low';
  } catch {
    // keeps the process's priority
  }
  return 'normal';
}

/** What the executor posts to a worker thread for one task. */
export interface WorkerTask {
  task: string;
  input: unknown;
  /** Told as the task starts, so its deadline counts from there and not from when it was handed to the pool. */
  started: MessagePort;
}

/**
 * The piscina handler of a worker file: signals the start, then runs the named task of the catalogue. The thread
 * runs at a lower CPU priority than the event loop (lowerThreadPriority, as the executor's `threadPriority` says).
 */
export function workerHandler(tasks: Record<string, (input: never) => unknown>) {
  const shared = workerData as Record<string, unknown> | undefined;
  lowerThreadPriority((shared?.[THREAD_PRIORITY_KEY] as ExecutorThreadPriority | undefined) ?? 'low');
  return (message: WorkerTask): unknown => {
    message.started.postMessage(null);
    message.started.close();
    const run = Object.prototype.hasOwnProperty.call(tasks, message.task) ? tasks[message.task] : undefined;
    if (!run) throw new Error(`unknown executor task '${message.task}'`);
    return run(message.input as never);
  };
}
