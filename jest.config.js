/**
 * One embedded PostgreSQL per run (globalSetup); every test file gets its own database cloned from a
 * migrated template. NestJS 12 and several dependencies ship ES modules only, which Jest on Node 20
 * cannot require, so those packages are compiled to CommonJS by swc (cached after the first run).
 */
const ESM_PACKAGES = [
  '@nestjs', '@nestjs-cls', 'nestjs-cls', 'jose', 'file-type', 'strtok3', 'token-types', 'uint8array-extras',
  '@tokenizer', '@borewit', 'fast-check', 'cookie', 'content-disposition', 'set-cookie-parser', 'toad-cache',
  'libphonenumber-js', '@standard-schema', 'ansis', 'formidable',
  'lru-cache', 'minimatch', 'glob', 'path-scurry', 'minipass', 'brace-expansion', 'balanced-match', '@ungap',
];

module.exports = {
  rootDir: '.',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest'],
    '^.+\\.m?js$': [
      '@swc/jest',
      { swcrc: false, jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_PACKAGES.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  maxWorkers: process.env.JEST_WORKERS ? Number(process.env.JEST_WORKERS) : 2,
  testTimeout: 60000,
};
