import { takeViolations } from './openapi-conformance';

/**
 * Fails the test that received a response the OpenAPI document does not describe (test/support/openapi-conformance.ts).
 * Responses received in beforeAll are reported with the first test; those of afterAll fail the file.
 */
function failOnViolations(): void {
  const violations = takeViolations();
  if (violations.length === 0) return;
  throw new Error(
    `${violations.length} response(s) do not obey docs/openapi.json (fix the document or the response; ` +
      `see test/support/openapi-conformance.ts):\n  ${violations.join('\n  ')}`,
  );
}

afterEach(failOnViolations);
afterAll(failOnViolations);
