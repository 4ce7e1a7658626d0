import type { IncomingMessage } from 'http';

/**
 * OpenTelemetry tracing (@opentelemetry/sdk-node), off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set: then it exports spans over OTLP (`OTEL_EXPORTER_OTLP_PROTOCOL`,
 * default `http/protobuf`) for incoming requests (a W3C `traceparent` on the request becomes their parent), SQL
 * statements inside a span, background passes (src/jobs/job-loop.ts), and outgoing calls: webhook deliveries (node's
 * http client) and driver calls (fetch, i.e. undici), which send `traceparent`. Log lines written inside a span carry
 * its `trace_id` and `span_id` (the pino instrumentation). Every other setting is the SDK's own `OTEL_*` variables
 * (docs/operations.md, "Traces"). Off, nothing of the SDK is loaded.
 *
 * It must start before the modules it instruments are loaded: src/main.ts imports this file first.
 */
export interface Tracing {
  shutdown(): Promise<void>;
}

/** Paths probes and Prometheus call every few seconds: no spans. */
const UNTRACED_PATHS = new Set(['/health', '/health/ready', '/metrics']);

export function startTracing(env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  if (env.OTEL_SDK_DISABLED === 'true') return undefined;
  // Traces only: metrics are Prometheus's (/metrics), logs are stdout's.
  env.OTEL_METRICS_EXPORTER ??= 'none';
  env.OTEL_LOGS_EXPORTER ??= 'none';
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici') as typeof import('@opentelemetry/instrumentation-undici');
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { PinoInstrumentation } = require('@opentelemetry/instrumentation-pino') as typeof import('@opentelemetry/instrumentation-pino');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? 'cluster-management-service',
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req: IncomingMessage) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0]),
      }),
      new UndiciInstrumentation(),
      // Statements outside any span (pool housekeeping, the LISTEN connection) make no traces of their own.
      new PgInstrumentation({ requireParentSpan: true }),
      new PinoInstrumentation(),
    ],
  });
  sdk.start();
  return sdk;
}

/** The process's tracing, started when this module is first imported (src/main.ts's first import). */
export const tracing = startTracing();
