import type { EmbeddedDatabase } from '../database/embedded-postgres';

/**
 * What the health endpoints report beyond the database: whether this instance is draining (shutting down:
 * readiness answers 503 at once so load balancers stop sending) and, with the embedded database, whether
 * its PostgreSQL process is up (liveness fails while it is down).
 */
export class ServiceState {
  draining = false;

  constructor(
    readonly embedded?: EmbeddedDatabase,
    /** Aborted by a SIGTERM or SIGINT while the process starts (src/main.ts): start-up stops where it waits. */
    readonly startupSignal?: AbortSignal,
    /** Told why start-up waits for the database schema (src/main.ts answers readiness with it meanwhile). */
    readonly onSchemaWait?: (reason: string) => void,
  ) {}
}
