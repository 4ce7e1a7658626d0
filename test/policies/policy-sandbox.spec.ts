import 'reflect-metadata';
import { MAX_ESTIMATED_COST, MAX_VALUE_SIZE } from '../../src/policies/policy-limits';
import { PolicyLanguage } from '../../src/policies/policy-language';
import { metered, PolicyEvaluationStopped } from '../../src/policies/policy-meter';
import { POLICY_EXAMPLES } from '../../src/policies/policy-examples';
import { PolicyInput, policyVariableSchema } from '../../src/policies/policy-variables';
import { AUDIT, GROWTH, REFUSED } from './growth-expressions';

/**
 * Cluster policy expressions cannot hurt the service: growth is refused when the policy is written (the size-aware
 * estimate names the sub-expression and its cost), and an evaluation that gets past that (a policy saved under
 * older limits, inputs larger than their write bounds) is cut by its run-time budget and the value size cap.
 */
describe('policy sandbox: write-time estimate and run-time budget', () => {
  const language = new PolicyLanguage(policyVariableSchema());
  const check = (expression: string, types = ['bool']) => language.check('expression', expression, types);

  it.each(Object.entries(GROWTH))('refuses %s at write time, naming the sub-expression and its estimate', (_kind, expression) => {
    expect(expression.length).toBeLessThanOrEqual(2048);
    const errors = check(expression);
    expect(errors).toHaveLength(1);
    expect(errors[0].field).toBe('expression');
    expect(errors[0].message).toMatch(new RegExp(`^expression: line 1, column \\d+: .*${REFUSED.source}`));
  });

  it("names the audit expression's first doubling that may pass the size cap", () => {
    const [error] = check(AUDIT);
    // 4,096 characters doubled nine times is 2,097,152.
    expect(error.message).toMatch(/^expression: line 1, column \d+: `a \+ a` may build a value of 2097152 characters or elements \(estimated cost \d+\); at most 1048576/);
    const column = Number(/column (\d+)/.exec(error.message)![1]);
    expect(AUDIT.slice(column - 1, column + 4)).toBe('a + a');
    expect(AUDIT.slice(0, column).match(/\.map\(/g)).toHaveLength(9);
  });

  it('refuses growth in a message expression the same way', () => {
    const errors = language.check('messageExpression', `[object.name]${'.map(a, a + a)'.repeat(10)}.join(',')`, ['string']);
    expect(errors[0].message).toMatch(/^messageExpression: line 1, column \d+: `a \+ a` may build a value of/);
  });

  it('keeps accepting the ready policies, with estimates within the limit', () => {
    for (const { body } of POLICY_EXAMPLES) {
      expect({ name: body.name, errors: check(body.expression, ['bool', 'dyn']) }).toEqual({ name: body.name, errors: [] });
      if (body.messageExpression) expect(language.check('messageExpression', body.messageExpression, ['string', 'dyn'])).toEqual([]);
      expect(language.estimatedCost(body.expression)).toBeLessThanOrEqual(MAX_ESTIMATED_COST);
    }
  });

  /** A cluster at the write bounds: 100 node pools, 4,096-character strings, 100 labels each. */
  function worstInput(over: Record<string, unknown> = {}): PolicyInput {
    const long = (c: string) => c.repeat(4096);
    const labels = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`.padEnd(253, 'k'), long('v')]));
    const cluster = {
      name: long('n'),
      region: long('r'),
      version: '1.31.6',
      highlyAvailable: false,
      deleteProtection: true,
      enableNetworkEncryption: false,
      autoUpgrade: false,
      updateChannel: null,
      podSecurityStandardsProfile: 'baseline',
      nodePools: Array.from({ length: 100 }, (_, i) => ({ name: long('p') + i, nodeSize: long('s'), minSize: 0, maxSize: 50, labels: { ...labels, team: '' } })),
      ...over,
    };
    return {
      object: cluster,
      oldObject: { ...cluster, version: '1.31.7' },
      environment: { identity: 'e', name: 'production', slug: { slugValue: 'production' }, type: 'production', purpose: null, description: '' },
      organisation: { identity: 'o', name: 'acme', slug: { slugValue: 'acme' }, type: null, upgradeSoakHours: 24 },
      request: { operation: 'DELETE', resource: 'clusters', user: { identity: null, username: 'system', platformAdmin: false } },
    } as unknown as PolicyInput;
  }

  it('meters the ready policies on a cluster at the write bounds within their write-time estimates', () => {
    const input = worstInput();
    for (const { body } of POLICY_EXAMPLES) {
      for (const source of [body.expression, body.messageExpression].filter((s): s is string => !!s)) {
        const program = language.compile(source);
        const { spent } = metered(1e12, () => program(input));
        expect({ source, spent: spent <= language.estimatedCost(source) }).toEqual({ source, spent: true });
      }
    }
  });

  /** Runs a program (written before the checks, so compiled without them) under the default budget. */
  const run = (source: string, input = worstInput()) => {
    const program = language.compile(source);
    return () => metered(language.runtimeCostLimit, () => program(input)).value;
  };

  it('cuts the growth expressions at run time when they got past the write-time check', () => {
    // The size cap stops the doubling before it builds more than 1,048,576 characters.
    expect(run(AUDIT)).toThrow(PolicyEvaluationStopped);
    expect(run(AUDIT)).toThrow(/evaluation stopped: `a \+ a` \(line 1, column \d+\) would build a value of 2097152 characters or elements; at most 1048576/);
    for (const [kind, expression] of Object.entries(GROWTH)) {
      let outcome: unknown;
      try {
        outcome = run(expression)();
      } catch (e) {
        outcome = e;
      }
      // Either stopped, or it finished within the budget (the estimate was a worst case these inputs do not reach).
      expect({ kind, stopped: outcome instanceof PolicyEvaluationStopped || typeof outcome === 'boolean' }).toEqual({ kind, stopped: true });
    }
  });

  it('stops an evaluation past its budget, naming where, and a value past the size cap before it is built', () => {
    // Within the write-time estimate for 100 node pools; 20,000 node pools (more than any write allows) cost more.
    const pools = Array.from({ length: 20_000 }, (_, i) => ({ name: `p${i}`, minSize: 1, maxSize: 2, labels: {} }));
    const many = run('object.nodePools.all(a, object.nodePools.all(b, a.minSize <= b.maxSize))', worstInput({ nodePools: pools }));
    expect(many).toThrow(/^evaluation stopped: the budget of 1000000 cost units per evaluation is spent, at `.+` \(line 1, column \d+\)$/);
    // join checks the length of what it would build first.
    const join = run(`[${Array.from({ length: 10 }, () => 'object.name').join(', ')}].map(a, [a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a].join(a)).join(object.name).size() > 0`);
    expect(join).toThrow(/would build a value of \d+ characters or elements; at most 1048576/);
    expect(MAX_VALUE_SIZE).toBe(1048576);
  });

  it('stops string functions on huge strings and matches() on long inputs within the budget', () => {
    const huge = 'a'.repeat(MAX_VALUE_SIZE);
    // 1 M characters scanned by RE2 100 times: 20 M units.
    expect(run("object.nodePools.exists(p, object.name.matches('^(a|aa)*b$'))", worstInput({ name: huge }))).toThrow(/budget .* is spent/);
    expect(run('object.nodePools.exists(p, object.name.upperAscii().size() == 1)', worstInput({ name: huge }))).toThrow(/budget .* is spent/);
    expect(run("object.nodePools.exists(p, object.name.split('').size() == 1)", worstInput({ name: huge }))).toThrow(/budget .* is spent/);
  });

  it('iterates maps within the budget and keeps integers in int64', () => {
    const labels = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, `v${i}`]));
    const pools = [{ name: 'p', labels }];
    expect(run("object.nodePools.all(p, p.labels.all(a, p.labels.exists(b, a != b + 'x')))", worstInput({ nodePools: pools }))).toThrow(/budget .* is spent/);
    expect(check('9223372036854775807 + 1 > 0')).toEqual([]);
    expect(run('9223372036854775807 + 1 > 0')).toThrow(/overflow/);
    expect(run('-(-9223372036854775807 - 1) > 0')).toThrow(/integer overflow at `-\(-9223372036854775807 - 1/);
    expect(run('(-9223372036854775807 - 1) * -1 > 0')).toThrow(/overflow/);
  });

  it('bounds duration() parsing (a backtracking pattern in the library) to short strings', () => {
    expect(run("duration('1h30m') > duration('1h')")()).toBe(true);
    expect(run('duration(object.name) > duration("1h")', worstInput({ name: '1'.repeat(4096) }))).toThrow(/duration\(\) takes a string of at most 32 characters/);
  });

  it('charges time-zone accessors like the work they do', () => {
    expect(language.estimatedCost("object.nodePools.all(p, timestamp('2026-01-01T00:00:00Z').getHours('Europe/Berlin') < 25)")).toBeGreaterThan(MAX_ESTIMATED_COST);
    expect(check("timestamp('2026-01-01T00:00:00Z').getHours('Europe/Berlin') < 25")).toEqual([]);
  });

  it('answers the evaluation errors as errors, each policy on its own budget', () => {
    const results = language.evaluate(
      [
        { expression: AUDIT, message: 'grows', messageExpression: null },
        { expression: 'object.highlyAvailable', message: 'not HA', messageExpression: `[object.name]${'.map(a, a + a)'.repeat(27)}[0]` },
        { expression: 'object.deleteProtection', message: 'unused', messageExpression: null },
      ],
      [worstInput()],
    );
    expect(results[0][0]).toEqual({ passed: false, message: expect.stringMatching(/^grows \(the expression could not be evaluated: evaluation stopped: `a \+ a`/), error: expect.stringMatching(/^evaluation stopped/) });
    // A message expression that cannot be evaluated falls back to the message; the verdict stands.
    expect(results[0][1]).toEqual({ passed: false, message: 'not HA', error: null });
    expect(results[0][2]).toEqual({ passed: true, message: null, error: null });
  });
});
