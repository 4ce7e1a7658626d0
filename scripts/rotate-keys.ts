import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { clusterDriverSecretContext } from '../src/cluster-drivers/cluster-driver.entity';
import { clusterOidcSecretContext } from '../src/clusters/cluster-access.entity';
import { SecretBox } from '../src/common/secret-box';
import { ConfigValidationError, loadConfig } from '../src/config/app-config';
import { buildDataSourceOptions } from '../src/database/data-source-options';
import { integrationConfigContext } from '../src/observability/organisation-integration.entity';
import { webhookUrlContext } from '../src/webhooks/webhooks.service';

/**
 * `node dist/scripts/rotate-keys.js` (`npm run keys:rotate`; production dependencies only): re-seals every sealed value
 * of the database with CREDENTIALS_ENCRYPTION_KEY, opening those sealed with a key of
 * CREDENTIALS_ENCRYPTION_KEY_PREVIOUS. Safe while the service runs (each value is replaced only if unchanged since it was
 * read) and to run again. docs/operations.md, "Rotating the credentials encryption key".
 */

/** One column of sealed values: where it is, how its rows are named, and the context each value is bound to. */
export interface SealedColumn {
  table: string;
  column: string;
  /** The row's key column. */
  key: string;
  /** SQL of the value the context is made from (may use the table as `t`); `from` joins what it needs. */
  contextSource: string;
  from?: string;
  context: (source: string) => string;
  /** Only values that are envelopes (a column that may also hold plain text written before sealing). */
  envelopesOnly?: boolean;
}

/** Every sealed column. A new one must be added here (test/operations/key-rotation.e2e-spec.ts finds `*_ciphertext` columns missing). */
export const SEALED_COLUMNS: SealedColumn[] = [
  { table: 'cloud_credentials', column: 'secret_ciphertext', key: 'id', contextSource: 't.identity::text', context: (s) => s },
  { table: 'dashboard_integrations', column: 'api_token_ciphertext', key: 'id', contextSource: 't.identity::text', context: (s) => s },
  { table: 'organisation_integrations', column: 'secret_config_ciphertext', key: 'id', contextSource: 't.identity::text', context: integrationConfigContext },
  { table: 'webhook_subscriptions', column: 'secret_ciphertext', key: 'id', contextSource: 't.identity::text', context: (s) => s },
  { table: 'webhook_subscriptions', column: 'previous_secret_ciphertext', key: 'id', contextSource: 't.identity::text', context: (s) => s },
  { table: 'webhook_subscriptions', column: 'url_ciphertext', key: 'id', contextSource: 't.identity::text', context: webhookUrlContext },
  { table: 'cluster_drivers', column: 'secret_ciphertext', key: 'id', contextSource: 't.identity::text', context: clusterDriverSecretContext },
  {
    table: 'cluster_access',
    column: 'oidc_client_secret_ciphertext',
    key: 'cluster_id',
    contextSource: 'c.identity::text',
    from: 'JOIN clusters c ON c.id = t.cluster_id',
    context: clusterOidcSecretContext,
  },
  { table: 'observability_tenants', column: 'alerting_config', key: 'id', contextSource: 't.id::text', context: (s) => `tenant-alerting:${s}`, envelopesOnly: true },
  {
    table: 'environment_alerting_configs',
    column: 'alerting_config',
    key: 'environment_id',
    contextSource: 't.environment_id::text',
    context: (s) => `environment-alerting:${s}`,
    envelopesOnly: true,
  },
];

export interface ColumnRotation {
  column: string;
  resealed: number;
  current: number;
}

/** Re-seals every value of SEALED_COLUMNS not sealed with the current key; what it did, per column. */
export async function rotateSealedValues(ds: DataSource, box: SecretBox, batch = 500): Promise<ColumnRotation[]> {
  const report: ColumnRotation[] = [];
  for (const c of SEALED_COLUMNS) {
    const done: ColumnRotation = { column: `${c.table}.${c.column}`, resealed: 0, current: 0 };
    let after: string | number | null = null;
    for (;;) {
      const rows = (await ds.query(
        `SELECT t.${c.key} AS key, t.${c.column} AS sealed, ${c.contextSource} AS source
           FROM ${c.table} t ${c.from ?? ''}
          WHERE t.${c.column} IS NOT NULL ${c.envelopesOnly ? `AND t.${c.column} LIKE 'v1.%' AND position(E'\\n' in t.${c.column}) = 0` : ''}
            AND ($1::bigint IS NULL OR t.${c.key} > $1::bigint)
          ORDER BY t.${c.key} LIMIT ${batch}`,
        [after],
      )) as { key: string | number; sealed: string; source: string }[];
      if (!rows.length) break;
      for (const row of rows) {
        const context = c.context(row.source);
        let current: boolean;
        try {
          current = box.sealedWithCurrentKey(row.sealed, context);
        } catch {
          throw new Error(
            `${c.table}.${c.column} of row ${row.key}: no configured key opens it (CREDENTIALS_ENCRYPTION_KEY_PREVIOUS must hold the key it was sealed with)`,
          );
        }
        if (current) {
          done.current++;
          continue;
        }
        const resealed = box.seal(box.open(row.sealed, context), context);
        // Only if nobody changed it meanwhile (the service keeps running): a value written since is on the current key.
        const [, affected] = (await ds.query(`UPDATE ${c.table} SET ${c.column} = $1 WHERE ${c.key} = $2 AND ${c.column} = $3`, [
          resealed,
          row.key,
          row.sealed,
        ])) as [unknown, number];
        if (affected) done.resealed++;
        else done.current++;
      }
      after = rows[rows.length - 1].key;
    }
    report.push(done);
  }
  return report;
}

async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.DATABASE_URL || !config.CREDENTIALS_ENCRYPTION_KEY) {
    throw new ConfigValidationError('Invalid configuration:\n  the key rotation needs DATABASE_URL and CREDENTIALS_ENCRYPTION_KEY (the new key)');
  }
  if (!config.previousEncryptionKeys.length) {
    process.stdout.write('CREDENTIALS_ENCRYPTION_KEY_PREVIOUS is unset: checking that every value is sealed with the current key.\n');
  }
  const box = new SecretBox(config);
  const ds = await new DataSource(buildDataSourceOptions(config.DATABASE_URL, { poolSize: 1, unboundedStatements: true, applicationName: 'cluster-management-service-keys' })).initialize();
  try {
    const report = await rotateSealedValues(ds, box);
    for (const r of report) process.stdout.write(`${r.column}: ${r.resealed} re-sealed, ${r.current} already on the current key\n`);
    process.stdout.write('Every sealed value is on the current key; CREDENTIALS_ENCRYPTION_KEY_PREVIOUS can be removed.\n');
  } finally {
    await ds.destroy();
  }
}

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(e instanceof ConfigValidationError ? `${e.message}\n` : `Key rotation failed: ${(e as Error).message}\n`);
    process.exit(e instanceof ConfigValidationError ? 2 : 1);
  });
}
