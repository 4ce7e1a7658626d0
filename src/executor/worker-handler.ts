import type { MessagePort } from 'worker_threads';

/** What the executor posts to a worker thread for one task. */
export interface WorkerTask {
  task: string;
  input: unknown;
  /** Told as the task starts, so its deadline counts from there and not from when it was handed to the pool. */
  started: MessagePort;
}

/** The piscina handler of a worker file: signals the start, then runs the named task of the catalogue. */
export function workerHandler(tasks: Record<string, (input: never) => unknown>) {
  return (message: WorkerTask): unknown => {
    message.started.postMessage(null);
    message.started.close();
    const run = Object.prototype.hasOwnProperty.call(tasks, message.task) ? tasks[message.task] : undefined;
    if (!run) throw new Error(`unknown executor task '${message.task}'`);
    return run(message.input as never);
  };
}
