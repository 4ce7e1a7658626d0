import * as fs from 'fs';
import * as os from 'os';
import type { MessagePort } from 'worker_threads';

/** The niceness of the executor's worker threads: the event loop's thread wins the CPU when both want it. */
export const WORKER_NICENESS = 10;

/**
 * Lowers this thread's CPU priority (Linux: a thread is a task with its own niceness, set through its thread id),
 * so that on a busy machine the expensive work on user input yields the CPU to the event loop, which answers every
 * other request. Best effort: elsewhere, or without /proc, the thread keeps the process's priority.
 */
export function lowerThreadPriority(): boolean {
  try {
    const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid === process.pid) return false;
    os.setPriority(tid, WORKER_NICENESS);
    return os.getPriority(tid) === WORKER_NICENESS;
  } catch {
    return false;
  }
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
 * runs at a lower CPU priority than the event loop (lowerThreadPriority).
 */
export function workerHandler(tasks: Record<string, (input: never) => unknown>) {
  lowerThreadPriority();
  return (message: WorkerTask): unknown => {
    message.started.postMessage(null);
    message.started.close();
    const run = Object.prototype.hasOwnProperty.call(tasks, message.task) ? tasks[message.task] : undefined;
    if (!run) throw new Error(`unknown executor task '${message.task}'`);
    return run(message.input as never);
  };
}
