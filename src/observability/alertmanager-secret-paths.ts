/**
 * Where an Alertmanager configuration holds credentials: the fields Alertmanager itself types as `Secret` or
 * `SecretURL` (and so shows as `<secret>` in its own API), written out here as data. The redaction itself
 * (alerting-secrets.ts) parses YAML and runs on the executor's worker threads; the OpenAPI document names these
 * places from the main thread.
 */

/**
 * The credential fields of an HTTP client configuration (Prometheus' common `http_config`), relative to it:
 * basic auth password, authorization credentials, the deprecated bearer token, the OAuth2 client secret (and
 * the TLS key and proxy of its own token client), the TLS client key, header values listed as `secrets`, and
 * proxy CONNECT headers. `proxy_url` is listed too: its userinfo may hold a password (Alertmanager masks that).
 */
const HTTP_CLIENT_SECRETS = [
  'basic_auth.password',
  'authorization.credentials',
  'bearer_token',
  'oauth2.client_secret',
  'oauth2.tls_config.key',
  'oauth2.proxy_url',
  'oauth2.proxy_connect_header',
  'tls_config.key',
  'proxy_url',
  'proxy_connect_header',
  'http_headers.*.secrets',
];

/**
 * Each receiver integration (`receivers[].<type>`) and its own credential fields; every one of them may also carry
 * an `http_config` (HTTP_CLIENT_SECRETS). Chat webhooks are credentials by their URL alone.
 */
const RECEIVER_SECRETS: Record<string, readonly string[]> = {
  discord_configs: ['webhook_url'],
  email_configs: ['auth_password', 'auth_secret', 'tls_config.key'],
  incidentio_configs: ['alert_source_token'],
  jira_configs: [],
  mattermost_configs: ['webhook_url'],
  msteams_configs: ['webhook_url'],
  msteamsv2_configs: ['webhook_url'],
  opsgenie_configs: ['api_key'],
  pagerduty_configs: ['routing_key', 'service_key'],
  pushover_configs: ['user_key', 'token'],
  rocketchat_configs: ['token', 'token_id'],
  slack_configs: ['api_url'],
  sns_configs: ['sigv4.secret_key'],
  telegram_configs: ['bot_token'],
  victorops_configs: ['api_key'],
  webex_configs: [],
  webhook_configs: ['url'],
  wechat_configs: ['api_secret'],
};

/** The defaults under `global` that receivers inherit. */
const GLOBAL_SECRETS = [
  'smtp_auth_password',
  'smtp_auth_secret',
  'smtp_tls_config.key',
  'slack_api_url',
  'opsgenie_api_key',
  'victorops_api_key',
  'wechat_api_secret',
  'rocketchat_token',
  'rocketchat_token_id',
  ...HTTP_CLIENT_SECRETS.map((p) => `http_config.${p}`),
];

/**
 * A receiver integration this list does not know (a newer Alertmanager's): every value in it is treated as secret
 * except these keys, an allow-list being the smaller set there.
 */
export const UNKNOWN_INTEGRATION_PUBLIC_KEYS = ['send_resolved', 'max_alerts', 'timeout'] as const;

/**
 * Every secret place of an Alertmanager configuration, as a dotted path from the document root (`*`: any map key or
 * list index). What lies below such a place is secret whole (a list of header secrets, a map of proxy headers).
 */
export const ALERTMANAGER_SECRET_PATHS: readonly string[] = [
  ...GLOBAL_SECRETS.map((p) => `global.${p}`),
  ...Object.entries(RECEIVER_SECRETS).flatMap(([type, own]) =>
    [...own, ...HTTP_CLIENT_SECRETS.map((p) => `http_config.${p}`)].map((p) => `receivers.*.${type}.*.${p}`),
  ),
];

/** The receiver integration types the list knows. */
export const KNOWN_RECEIVER_INTEGRATIONS: readonly string[] = Object.keys(RECEIVER_SECRETS);
