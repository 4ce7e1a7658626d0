import { parentPort } from 'worker_threads';
import { AlertingFilesInput, checkAlertingFiles } from './alerting-validation';

/** Runs YAML checks of alerting configurations off the service's event loop (see alerting-checker.ts). */
parentPort?.on('message', (message: { id: number; input: AlertingFilesInput }) => {
  try {
    parentPort!.postMessage({ id: message.id, problems: checkAlertingFiles(message.input) });
  } catch (e) {
    parentPort!.postMessage({ id: message.id, error: (e as Error).message });
  }
});
