/**
 * One embedded PostgreSQL per run (globalSetup); every test file gets its own database cloned from a
 * migrated template. Runs on the Node.js 24 from node_modules/.bin (npm puts it first on the PATH).
 */
module.exports = {
  rootDir: '.',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  // Every response an e2e test receives is checked against docs/openapi.json (test/support/openapi-conformance.ts).
  setupFilesAfterEnv: ['<rootDir>/test/support/openapi-conformance.setup.ts'],
  maxWorkers: process.env.JEST_WORKERS ? Number(process.env.JEST_WORKERS) : 2,
  testTimeout: 60000,
};
