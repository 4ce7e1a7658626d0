import * as fs from 'fs';
import * as path from 'path';
import { DRIVER_ERROR_CLASSES, DRIVER_OPERATIONS, DRIVER_PROTOCOL_VERSION, OBSERVED_STATES } from '../../src/cluster-drivers/driver-contract';
import { type Region, withRegion } from './marked-region';

/**
 * The OpenAPI document of the cluster driver protocol v1 (docs/driver-protocol.openapi.json) and its rendering in
 * docs/drivers.md, written by `npm run docs:drivers`. Its schemas are the contract's types
 * (src/cluster-drivers/driver-contract.ts): test/cluster-drivers/driver-protocol.spec.ts checks that the committed files
 * are what this script writes, and that the types openapi-typescript generates from the document are the contract's
 * (test/cluster-drivers/driver-protocol-types.ts, checked both ways by the compiler).
 */
export const PROTOCOL_DOC = path.resolve(__dirname, '../../docs/driver-protocol.openapi.json');
export const DRIVERS_DOC = path.resolve(__dirname, '../../docs/drivers.md');
export const PROTOCOL_REGION: Region = { name: 'driver-protocol', command: 'npm run docs:drivers' };

type Schema = Record<string, unknown>;
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const str = (description?: string, extra: Schema = {}): Schema => ({ type: 'string', ...(description ? { description } : {}), ...extra });
const nullable = (s: Schema): Schema => (s.$ref ? { oneOf: [s, { type: 'null' }] } : { ...s, type: [s.type as string, 'null'] });
const int = (description?: string, extra: Schema = {}): Schema => ({ type: 'integer', ...(description ? { description } : {}), ...extra });
const bool = (description?: string): Schema => ({ type: 'boolean', ...(description ? { description } : {}) });
const arr = (items: Schema, description?: string): Schema => ({ type: 'array', items, ...(description ? { description } : {}) });
const map = (values: Schema, description?: string): Schema => ({ type: 'object', additionalProperties: values, ...(description ? { description } : {}) });
const obj = (properties: Record<string, Schema>, description?: string): Schema => ({
  type: 'object',
  ...(description ? { description } : {}),
  required: Object.keys(properties),
  properties,
  additionalProperties: false,
});

const schemas: Record<string, Schema> = {
  DriverNodeType: obj(
    { name: str("The provider's name of the type (e.g. `m5.large`)"), cpu: nullable(int('vCPUs')), memoryMb: nullable(int('Memory in MiB')) },
    'A node type as the catalog describes it.',
  ),
  DriverTaint: obj({ key: str(), value: str(), effect: str(undefined, { enum: ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] }) }),
  DesiredNodePool: obj(
    {
      identity: str('Stable identity of the pool (uuid): the key a driver tracks it by (names can change).', { format: 'uuid' }),
      name: str(),
      generation: int("The cluster generation of the pool's last change.", { minimum: 1 }),
      nodeType: ref('DriverNodeType'),
      availabilityZone: nullable(str("Zone of the pool, or null for the cluster's zones.")),
      autoScaling: bool(),
      minSize: int("With autoScaling the autoscaler's lower bound; without it the pool runs minSize nodes.", { minimum: 0 }),
      maxSize: int(undefined, { minimum: 0 }),
      labels: map(str()),
      annotations: map(str()),
      taints: arr(ref('DriverTaint')),
      upgradeStrategy: str(undefined, { enum: ['REPLACE', 'INPLACE', 'INPLACE_WITHOUT_DRAIN', 'REPLACE_MINOR_INPLACE_PATCH', 'REPLACE_MINOR_INPLACE_PATCH_WITHOUT_DRAIN'] }),
      enableNodeAutoReplacement: bool(),
      enableNodeReboots: bool(),
      selfManaged: bool("A bring-your-own-node pool: the customer's machines join it; the driver provisions no machines for it."),
    },
    'One node pool of the desired spec.',
  ),
  DesiredAddon: obj({ name: str("The catalog's add-on name (e.g. `cert-manager`)."), enabled: bool(), settings: map(str(), "The add-on's custom values as the user set them.") }),
  DesiredClusterSpec: obj(
    {
      identity: str('Stable identity (uuid): the key a driver tracks the cluster by.', { format: 'uuid' }),
      generation: int('Bumped by every change of this spec; a driver reports the newest generation it brought about.', { minimum: 1 }),
      slug: str(),
      name: str(),
      organisation: obj({ identity: str(undefined, { format: 'uuid' }), slug: str() }),
      environment: obj({ identity: str(undefined, { format: 'uuid' }), slug: str(), type: str() }),
      cloudProvider: str(),
      cloudProfile: nullable(str("The cloud profile of the cluster's cloud account.")),
      region: str(),
      zones: arr(str(), "The region's availability zones the cluster may use."),
      version: str('Kubernetes version of the control plane (and of the pools, per their upgrade strategy).'),
      desiredState: str("Whether the cluster's machines run. Deletion is its own call.", { enum: ['running', 'stopped'] }),
      highAvailability: bool(),
      multiAvailabilityZones: bool(),
      natGateway: bool(),
      networkEncryption: bool(),
      cni: str(),
      podSubnet: nullable(str()),
      serviceSubnet: nullable(str()),
      ipAllowList: arr(obj({ cidr: str(), description: str() }), 'Addresses allowed to reach the API server; empty: everyone.'),
      podSecurityStandardsProfile: { type: ['string', 'null'], enum: ['privileged', 'baseline', 'restricted', null] },
      clusterAutoscaler: map({ type: ['string', 'number'] }, 'Cluster autoscaler flags by name (e.g. `scale-down-unneeded-time`).'),
      oidc: nullable(obj({ issuerUrl: str(), clientId: str(), usernameClaim: str(), groupsClaim: str() }, 'How the API server authenticates users; null: no OIDC.')),
      addons: arr(ref('DesiredAddon')),
      nodePools: arr(ref('DesiredNodePool')),
    },
    'The whole desired state of one cluster at one generation.',
  ),
  DriverCloudAccount: obj(
    {
      identity: str(undefined, { format: 'uuid' }),
      name: str(),
      cloudProvider: str(),
      cloudProfile: nullable(str()),
      metadata: map(str(), 'Account metadata (e.g. project or subscription ids).'),
      credentials: nullable(
        obj(
          { identity: str(undefined, { format: 'uuid' }), name: str(), values: map(str()) },
          'The primary credentials, decrypted: never log, store in clear or echo them.',
        ),
      ),
    },
    'The cloud account a cluster runs in, with its credentials for this call only.',
  ),
  DriverOperation: obj(
    {
      kind: str('Why the reconciler calls (informative: the spec alone says what is wanted).', { enum: [...DRIVER_OPERATIONS] }),
      step: str("The reconciler's step (e.g. `CLUSTER_PROVISIONED`, `starting`, `upgrade`, `update`)."),
      startedAt: str('When the reconciler started this step; the same on every call of the step.', { format: 'date-time' }),
    },
  ),
  ApplyRequest: obj(
    {
      idempotencyKey: str('`{identity}:{generation}`: a repeated key has no second effect.'),
      operation: ref('DriverOperation'),
      cluster: ref('DesiredClusterSpec'),
      cloudAccount: nullable(ref('DriverCloudAccount')),
    },
    'Create or update the cluster to `cluster`.',
  ),
  DeleteRequest: obj(
    {
      idempotencyKey: str('`{identity}:{generation}:delete`.'),
      operation: ref('DriverOperation'),
      cluster: ref('DesiredClusterSpec'),
      cloudAccount: nullable(ref('DriverCloudAccount')),
    },
    'Remove the cluster and everything the driver made for it.',
  ),
  ObserveRequest: obj({ cluster: ref('DesiredClusterSpec'), cloudAccount: nullable(ref('DriverCloudAccount')) }, 'What is there now; changes nothing.'),
  ObserveManyRequest: obj({ clusters: arr(ref('ObserveRequest')) }),
  DriverError: obj(
    {
      class: str('`retryable`: transient, tried again with backoff. `terminal`: the spec cannot be brought about as it is; the cluster shows Degraded.', { enum: [...DRIVER_ERROR_CLASSES] }),
      code: str('Machine-readable, e.g. `InvalidNodeType`, `QuotaExceeded`, `Throttled`.', { maxLength: 100 }),
      message: str("Shown to the cluster's users: no secrets.", { maxLength: 2000 }),
    },
    "A driver's error.",
  ),
  ObservedNodePool: obj({
    identity: str(undefined, { format: 'uuid' }),
    name: str(),
    desiredNodes: int('Nodes the pool is meant to have now.', { minimum: 0 }),
    readyNodes: int('Nodes that are up and ready.', { minimum: 0 }),
    version: nullable(str("Kubernetes version of the pool's nodes (the oldest, while they roll).")),
    ready: bool('The pool is as its spec of observedGeneration asks.'),
  }),
  ObservedCondition: obj({ type: str(), status: str(undefined, { enum: ['True', 'False', 'Unknown'] }), reason: str(), message: str() }),
  ClusterObservation: obj(
    {
      exists: bool(),
      observedGeneration: nullable(int('The newest generation the infrastructure fully matches; null when none yet.', { minimum: 1 })),
      state: str(undefined, { enum: [...OBSERVED_STATES] }),
      version: nullable(str('Kubernetes version of the control plane.')),
      controlPlane: nullable(obj({ ready: bool(), endpoint: nullable(str(undefined, { format: 'uri' })), caCertificate: nullable(str('PEM')) })),
      nodePools: arr(ref('ObservedNodePool')),
      addons: arr(obj({ name: str(), ready: bool() })),
      conditions: arr(ref('ObservedCondition'), "The driver's own conditions, shown as they are."),
      error: nullable(ref('DriverError')),
      retryAfterSeconds: nullable(int('Ask again no sooner than this (a hint).', { minimum: 0 })),
    },
    'What a driver observes of one cluster.',
  ),
  ObserveManyResponse: obj({ observations: map(ref('ClusterObservation'), 'By cluster identity; a cluster left out is not reachable now.') }),
  DriverCapabilities: obj({
    protocolVersion: str(undefined, { enum: [DRIVER_PROTOCOL_VERSION] }),
    driver: obj({ name: str(), version: str() }, "The driver's own name and version, for people."),
    cloudProviders: arr(str(), 'Cloud providers (and optionally profiles) it can serve.'),
    features: arr(str(), 'Optional features: `stopStart`, `upgrade`, `nodePoolScaling`, `addons`, `faultInjection`, ...'),
  }),
  DriverErrorResponse: obj({ error: ref('DriverError') }, "The body of a non-2xx answer that gives the driver's own error."),
};

const signed = [{ standardWebhooks: [] as string[] }];
const errors = {
  '401': { description: 'The signature is missing or wrong, or the timestamp is outside the replay window (or the message id was seen): nothing was done.' },
  '4XX': { description: "The driver's own error (terminal unless it says otherwise); a body without it is taken as terminal `DriverRejectedRequest`.", content: { 'application/json': { schema: ref('DriverErrorResponse') } } },
  '5XX': { description: 'A retryable error: the driver\'s own (`DriverErrorResponse`) or, without that body, `DriverUnavailable`. 429 and 408 count alike; `Retry-After` is honoured.', content: { 'application/json': { schema: ref('DriverErrorResponse') } } },
};
const post = (operationId: string, summary: string, description: string, request: string, response: string) => ({
  post: {
    operationId,
    summary,
    description,
    security: signed,
    requestBody: { required: true, content: { 'application/json': { schema: ref(request) } } },
    responses: { '200': { description: 'The observation after the call.', content: { 'application/json': { schema: ref(response) } } }, ...errors },
  },
});

export function driverProtocolDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Cluster driver protocol',
      version: DRIVER_PROTOCOL_VERSION,
      description:
        'What the Cluster Management Service asks of an out-of-process cluster driver (docs/drivers.md). Every request is signed ' +
        'per Standard Webhooks: `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,` + base64 of ' +
        'HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}` with the registered secret; the body of a GET is empty). A driver ' +
        'refuses (401) a request whose signature does not match, whose timestamp is more than 5 minutes away from its clock, or whose ' +
        'webhook-id it has seen within that window. Bodies are the types of src/cluster-drivers/driver-contract.ts. The service gives ' +
        'a call up after its timeout (retryable) and calls a driver at most its concurrency cap at once.',
    },
    paths: {
      [`/${DRIVER_PROTOCOL_VERSION}/capabilities`]: {
        get: {
          operationId: 'capabilities',
          summary: 'What the driver is and can do',
          description: 'The protocol version it speaks, its name and version, the cloud providers it serves and its optional features. The registry\'s health check calls it.',
          security: signed,
          responses: { '200': { description: 'The capabilities.', content: { 'application/json': { schema: ref('DriverCapabilities') } } }, ...errors },
        },
      },
      [`/${DRIVER_PROTOCOL_VERSION}/apply`]: post(
        'apply',
        'Create or update a cluster to the desired spec',
        'Idempotent per `idempotencyKey`: a repeated key has no second effect. A call whose generation is older than one the driver already acted on changes nothing. Long work is asynchronous: the driver answers at once with what it observes, and the service asks again.',
        'ApplyRequest',
        'ClusterObservation',
      ),
      [`/${DRIVER_PROTOCOL_VERSION}/delete`]: post(
        'delete',
        'Remove a cluster and everything made for it',
        'Idempotent; answers `exists: false` (state `absent`) once it is gone, also for a cluster the driver never knew.',
        'DeleteRequest',
        'ClusterObservation',
      ),
      [`/${DRIVER_PROTOCOL_VERSION}/observe`]: post(
        'observe',
        'Observe one cluster',
        'Changes nothing. A cluster the driver does not know answers `exists: false`, state `absent`.',
        'ObserveRequest',
        'ClusterObservation',
      ),
      [`/${DRIVER_PROTOCOL_VERSION}/observe-many`]: post(
        'observeMany',
        'Observe many clusters in one call',
        'Changes nothing. Answers observations by cluster identity; a cluster left out counts as not reachable now.',
        'ObserveManyRequest',
        'ObserveManyResponse',
      ),
    },
    components: {
      securitySchemes: {
        standardWebhooks: { type: 'apiKey', in: 'header', name: 'webhook-signature', description: 'Standard Webhooks signature (with `webhook-id` and `webhook-timestamp`).' },
      },
      schemas,
    },
  };
}

export const protocolDocumentText = (): string => `${JSON.stringify(driverProtocolDocument(), null, 2)}\n`;

/** The protocol in Markdown: operations, then every schema's fields. */
export function renderProtocolMarkdown(doc = driverProtocolDocument()): string {
  const out: string[] = [];
  const paths = doc.paths as Record<string, Record<string, { summary: string; description: string; requestBody?: { content: Record<string, { schema: Schema }> }; responses: Record<string, { content?: Record<string, { schema: Schema }> }> }>>;
  const refName = (s: Schema | undefined) => (s?.$ref ? String(s.$ref).split('/').pop() : '');
  out.push('| Operation | Request body | Answer (200) | What it does |', '|---|---|---|---|');
  for (const [p, ops] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const req = refName(op.requestBody?.content['application/json'].schema);
      const res = refName(op.responses['200'].content?.['application/json'].schema);
      out.push(`| \`${method.toUpperCase()} ${p}\` | ${req ? `[${req}](#${req.toLowerCase()})` : '(none)'} | [${res}](#${String(res).toLowerCase()}) | ${op.summary}. ${op.description} |`);
    }
  }
  out.push('', 'Every operation answers 401 to a request that is not signed right, a 4xx with `DriverErrorResponse` for the driver\'s own errors, and 5xx (or 429, 408) for retryable trouble.', '');
  const typeOf = (s: Schema): string => {
    if (s.$ref) return `[${refName(s)}](#${String(refName(s)).toLowerCase()})`;
    if (s.oneOf) return (s.oneOf as Schema[]).map(typeOf).join(' or ');
    const t = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    const base = t.filter((x) => x !== 'null');
    let shown: string;
    if (s.enum) shown = (s.enum as unknown[]).filter((v) => v !== null).map((v) => `\`${String(v)}\``).join(', ');
    else if (base[0] === 'array') shown = `array of ${typeOf(s.items as Schema)}`;
    else if (base[0] === 'object' && s.additionalProperties) shown = `map of ${typeOf(s.additionalProperties as Schema)}`;
    else if (base[0] === 'object') shown = 'object';
    else shown = base.join(' or ');
    return t.includes('null') ? `${shown} or null` : shown;
  };
  const components = (doc.components as { schemas: Record<string, Schema> }).schemas;
  for (const [name, schema] of Object.entries(components)) {
    out.push(`#### ${name}`, '');
    if (schema.description) out.push(String(schema.description), '');
    out.push('| Field | Type | Meaning |', '|---|---|---|');
    const rows = (props: Record<string, Schema>, prefix: string) => {
      for (const [field, s] of Object.entries(props)) {
        const inner = (Array.isArray(s.type) ? s.type.includes('object') : s.type === 'object') && s.properties ? s : null;
        out.push(`| \`${prefix}${field}\` | ${typeOf(s).replace(/\|/g, '\\|')} | ${String(s.description ?? '').replace(/\|/g, '\\|')} |`);
        if (inner) rows(inner.properties as Record<string, Schema>, `${prefix}${field}.`);
        const items = s.items as Schema | undefined;
        if (items?.properties) rows(items.properties as Record<string, Schema>, `${prefix}${field}[].`);
      }
    };
    rows(schema.properties as Record<string, Schema>, '');
    out.push('');
  }
  return out.join('\n');
}

if (require.main === module) {
  fs.writeFileSync(PROTOCOL_DOC, protocolDocumentText());
  fs.writeFileSync(DRIVERS_DOC, withRegion(fs.readFileSync(DRIVERS_DOC, 'utf8'), PROTOCOL_REGION, renderProtocolMarkdown()));
  process.stdout.write('wrote docs/driver-protocol.openapi.json and the protocol section of docs/drivers.md\n');
}
