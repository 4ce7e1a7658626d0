import 'reflect-metadata';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'crypto';
import { Client } from 'pg';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { DataSource } from 'typeorm';
import { createApp, RunningApp } from '../../src/app.factory';
import { Clock } from '../../src/common/clock';
import { loadConfig } from '../../src/config/app-config';
import { hashToken } from '../../src/tokens/tokens.service';
import { recordResponses } from './openapi-conformance';

export const ADMIN_TOKEN = 'cms_test_bootstrap_admin_token_0123456789';
export const TEST_ENCRYPTION_KEY = '001f300975b7c989d1a27fe6fff9895388f274531be7f3e2f3437ad628c7b1a9';

function withDatabase(serverUrl: string, db: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${db}`;
  return url.toString();
}

let dbCounter = 0;

/** A fresh database cloned from the migrated template; cheap (a file copy inside PostgreSQL). */
export async function createTestDatabase(): Promise<string> {
  const serverUrl = process.env.CMS_TEST_SERVER_URL;
  const template = process.env.CMS_TEST_TEMPLATE_DB;
  if (!serverUrl || !template) throw new Error('Test database not prepared: run through jest (globalSetup)');
  const name = `cms_t_${process.ppid}_${process.pid}_${++dbCounter}_${randomBytes(3).toString('hex')}`;
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    // CREATE DATABASE ... TEMPLATE needs the template idle; parallel workers retry briefly.
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
        break;
      } catch (e) {
        if (attempt > 40 || !/being accessed by other users/.test((e as Error).message)) throw e;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await client.end();
  }
  return withDatabase(serverUrl, name);
}

export interface TestUser {
  id: number;
  identity: string;
  username: string;
  email: string;
  token: string;
}

export class TestApp {
  constructor(
    readonly running: RunningApp,
    readonly databaseUrl: string,
  ) {}

  get app(): NestFastifyApplication {
    return this.running.app;
  }
  get clock(): Clock {
    return this.app.get(Clock);
  }
  get db(): DataSource {
    return this.app.get(DataSource);
  }
  get<T>(type: new (...args: never[]) => T): T {
    return this.app.get(type as never) as T;
  }

  /** supertest against the Fastify server. */
  http(): TestAgent {
    return request(this.app.getHttpServer());
  }

  /** Authenticated request helpers: as(token).get(path). */
  as(token: string) {
    const agent = this.http();
    const withAuth = <T extends { set(k: string, v: string): T }>(r: T) => r.set('Authorization', `Token ${token}`);
    return {
      get: (p: string) => withAuth(agent.get(p)),
      post: (p: string) => withAuth(agent.post(p)),
      patch: (p: string) => withAuth(agent.patch(p)),
      put: (p: string) => withAuth(agent.put(p)),
      delete: (p: string) => withAuth(agent.delete(p)),
    };
  }

  admin() {
    return this.as(ADMIN_TOKEN);
  }

  /** Creates a user directly in the database with a FULL_ACCESS token, bypassing the API. */
  async createUser(
    username: string,
    opts: { canCreateOrganisations?: boolean; platformAdmin?: boolean; email?: string } = {},
  ): Promise<TestUser> {
    const email = opts.email ?? `${username}@example.com`;
    const [user] = await this.db.query(
      `INSERT INTO users (username, email, can_create_organisations, platform_admin, created_at, modified_at)
       VALUES ($1, $2, $3, $4, now(), now()) RETURNING id, identity`,
      [username, email, opts.canCreateOrganisations ?? true, opts.platformAdmin ?? false],
    );
    const token = `cms_test_${username}_${randomBytes(12).toString('hex')}`;
    await this.db.query(
      `INSERT INTO personal_access_tokens (user_id, name, token_hash, type, expire_at, created_at)
       VALUES ($1, 'test', $2, 'FULL_ACCESS', now() + interval '30 days', now())`,
      [user.id, hashToken(token)],
    );
    return { id: user.id, identity: user.identity, username, email, token };
  }

  /**
   * Inserts an organisation and its members straight in SQL (fixtures that must not depend on the
   * organisations API). Returns the organisation id and each member's membership identity, in order.
   */
  async insertOrganisation(
    slug: string,
    members: { user: TestUser; role: 'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER'; kubernetesRole?: string }[],
    opts: { name?: string; quota?: number; restricted?: boolean; type?: string } = {},
  ): Promise<{ id: number; slug: string; memberIdentities: string[] }> {
    const [org] = await this.db.query(
      `INSERT INTO organisations (slug, name, type, clusters_per_customer, restricted_to_available_cloud_providers, created_at, modified_at)
       VALUES ($1, $2, $3, $4, $5, now(), now()) RETURNING id`,
      [slug, opts.name ?? slug, opts.type ?? 'BUSINESS', opts.quota ?? 25, opts.restricted ?? false],
    );
    const memberIdentities: string[] = [];
    for (const m of members) {
      const [row] = await this.db.query(
        `INSERT INTO organisation_members (organisation_id, user_id, role, kubernetes_role, joined_at)
         VALUES ($1, $2, $3, $4, now()) RETURNING identity`,
        [org.id, m.user.id, m.role, m.kubernetesRole ?? 'VIEW'],
      );
      memberIdentities.push(row.identity);
    }
    return { id: Number(org.id), slug, memberIdentities };
  }

  async close(): Promise<void> {
    await this.running.close();
  }
}

/** Boots the real app on its own database. `env` overrides configuration variables. */
export async function startTestApp(
  env: Record<string, string> = {},
  databaseUrl?: string,
  /** Logs go here (JSON lines) instead of being silenced. */
  logDestination?: NodeJS.WritableStream,
): Promise<TestApp> {
  const url = databaseUrl ?? (await createTestDatabase());
  const config = loadConfig({
    DATABASE_URL: url,
    BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
    CREDENTIALS_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    PROVISIONING_STEP_SECONDS: '0',
    BACKGROUND_JOBS_ENABLED: 'false',
    OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
    RATE_LIMIT_PER_MINUTE: '0',
    AUTH_FAILURE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'silent',
    DATABASE_POOL_SIZE: '5',
    ...env,
  });
  const running = await createApp(config, {
    ...(logDestination ? { logDestination } : { quiet: true }),
    // Every response is checked against the committed OpenAPI document (a violation fails the test).
    instrument: recordResponses,
  });
  return new TestApp(running, url);
}

/** Asserts the service's error body shape. */
export function expectErrorBody(body: Record<string, unknown>, status: number): void {
  expect(body).toEqual(
    expect.objectContaining({
      timestamp: expect.any(String),
      status,
      error: expect.any(String),
      message: expect.any(String),
      path: expect.any(String),
    }),
  );
}
