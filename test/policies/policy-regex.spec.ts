import 'reflect-metadata';
import { PolicyLanguage } from '../../src/policies/policy-language';
import { PolicyInput, policyVariableSchema } from '../../src/policies/policy-variables';

/**
 * `matches()` in policies runs on RE2 (CEL's definition), not on JavaScript's backtracking engine: a pattern that
 * backtracks catastrophically in JavaScript is linear here, and RE2-only syntax works.
 */
describe('policy matches() on RE2', () => {
  const language = new PolicyLanguage(policyVariableSchema());
  const input = (labelValue: string, name = 'web') =>
    ({
      object: { name, region: 'eu-west-1', nodePools: Array.from({ length: 50 }, (_, i) => ({ name: `p${i}`, labels: { k1: labelValue } })) },
      oldObject: null,
      environment: { identity: 'e', name: 'production', slug: { slugValue: 'production' }, type: 'production', purpose: null, description: '' },
      organisation: { identity: 'o', name: 'acme', slug: { slugValue: 'acme' }, type: null, upgradeSoakHours: 24 },
      request: { operation: 'CREATE', resource: 'clusters', user: { identity: null, username: 'system', platformAdmin: false } },
    }) as unknown as PolicyInput;

  it('accepts what backtracks in JavaScript and evaluates it in linear time', () => {
    const expression = "object.nodePools.all(p, 'k1' in p.labels && p.labels['k1'].matches('^a*a*a*a*c$'))";
    expect(language.check('expression', expression, ['bool'])).toEqual([]);
    expect(language.check('expression', "object.name.matches('^(a+)+$')", ['bool'])).toEqual([]);
    const program = language.compile(expression);
    const nested = language.compile("object.name.matches('^(a+)+$')");
    // 100 policies over 50 node pools with a 4,096-character label: JavaScript's RegExp needs hours for this, RE2
    // scans ~20 M characters (this test finishing is the proof; how fast is the benchmarks' concern).
    for (let i = 0; i < 100; i++) expect(program(input('a'.repeat(4096)))).toBe(false);
    expect(nested(input('x', 'a'.repeat(4000) + 'b'))).toBe(false);
  });

  it('uses RE2 syntax and semantics: inline flags, \\x{..} escapes, unanchored search', () => {
    expect(language.compile("object.name.matches('(?i)^WEB$')")(input('x'))).toBe(true);
    expect(language.compile("object.name.matches('^\\\\x{77}eb$')")(input('x'))).toBe(true);
    expect(language.compile("object.name.matches('e')")(input('x'))).toBe(true);
    expect(language.compile("object.name.matches('^e')")(input('x'))).toBe(false);
  });

  it('refuses patterns RE2 does not accept, naming the position', () => {
    const [lookahead] = language.check('expression', "object.name.matches('^(?=w)')", ['bool']);
    expect(lookahead.message).toMatch(/column 21: the pattern \/\^\(\?=w\)\/ is not a valid RE2 regular expression/);
    const [backreference] = language.check('expression', "object.name.matches('(a)\\\\1')", ['bool']);
    expect(backreference.message).toMatch(/not a valid RE2 regular expression/);
    const [long] = language.check('expression', `object.name.matches('${'a'.repeat(257)}')`, ['bool']);
    expect(long.message).toMatch(/longer than 256 characters/);
  });
});
