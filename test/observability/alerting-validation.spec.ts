import { checkAlertingConfig, checkAlertingFiles, checkRuleFile, describeProblem } from '../../src/observability/alerting-validation';
import { loadDefaultRules } from '../../src/observability/default-alerting-rules';

const VALID_CONFIG = 'route:\n  receiver: team\n  routes:\n    - receiver: oncall\nreceivers:\n  - name: team\n  - name: oncall\n';
const VALID_RULES = 'groups:\n  - name: node\n    rules:\n      - alert: NodeDown\n        expr: up == 0\n      - record: job:up:sum\n        expr: sum(up)\n';

describe('alerting configuration checks', () => {
  it('accepts a valid configuration', () => {
    expect(checkAlertingConfig(VALID_CONFIG)).toEqual([]);
    expect(checkRuleFile(VALID_RULES, 'ruleFiles.node.yaml')).toEqual([]);
    expect(checkAlertingFiles({ alertingConfig: VALID_CONFIG, ruleFiles: { 'node.yaml': VALID_RULES }, templateFiles: { 'a.tmpl': 'x' } })).toEqual([]);
  });

  it('reports YAML syntax errors with line and column', () => {
    const [p] = checkAlertingConfig('route:\n  receiver: team\nreceivers:\n  - name: [unclosed\n');
    expect(p.file).toBe('alertingConfig');
    expect(p.line).toBeGreaterThanOrEqual(4);
    expect(p.column).toBeGreaterThan(0);
    expect(p.message).toMatch(/invalid YAML/);
    const [dup] = checkRuleFile('groups: []\ngroups: []\n', 'ruleFiles.x.yaml');
    expect(dup).toMatchObject({ file: 'ruleFiles.x.yaml', line: 2 });
  });

  it('requires route, receivers and a known route receiver', () => {
    expect(checkAlertingConfig('receivers:\n  - name: a\n').map((p) => p.message)).toEqual([expect.stringMatching(/route is required/)]);
    expect(checkAlertingConfig('route:\n  receiver: a\n').map((p) => p.message)).toEqual([expect.stringMatching(/receivers is required/)]);
    expect(checkAlertingConfig('route:\n  receiver: a\nreceivers: []\n')[0].message).toMatch(/non-empty/);
    const unknown = checkAlertingConfig('route:\n  receiver: nobody\nreceivers:\n  - name: a\n');
    expect(unknown[0]).toMatchObject({ line: 2, column: 13 });
    expect(unknown[0].message).toMatch(/'nobody' names no receiver/);
    expect(checkAlertingConfig('route:\n  group_by: [x]\nreceivers:\n  - name: a\n')[0].message).toMatch(/route.receiver is required/);
    expect(checkAlertingConfig('route:\n  receiver: a\nreceivers:\n  - email: x\n')[0]).toMatchObject({ line: 4, message: expect.stringMatching(/receivers\[0\].name/) });
    expect(checkAlertingConfig('- a\n')[0].message).toMatch(/mapping/);
  });

  it('checks rule groups and rules', () => {
    const msgs = (t: string) => checkRuleFile(t, 'ruleFiles.r.yaml').map((p) => p.message);
    expect(msgs('rules: []\n')).toEqual([expect.stringMatching(/groups is required/)]);
    expect(msgs('groups: 3\n')).toEqual([expect.stringMatching(/groups must be a list/)]);
    expect(msgs('groups:\n  - rules: []\n')).toEqual([expect.stringMatching(/groups\[0\].name is required/)]);
    expect(msgs('groups:\n  - name: a\n')).toEqual([expect.stringMatching(/groups\[0\].rules is required/)]);
    expect(msgs('groups:\n  - name: a\n    rules:\n      - expr: up\n')).toEqual([expect.stringMatching(/needs alert or record/)]);
    expect(msgs('groups:\n  - name: a\n    rules:\n      - alert: A\n')).toEqual([expect.stringMatching(/expr is required/)]);
    expect(msgs('groups:\n  - name: a\n    rules:\n      - alert: A\n        record: b\n        expr: up\n')).toEqual([expect.stringMatching(/not both/)]);
    expect(msgs('groups:\n  - name: a\n    rules: []\n  - name: a\n    rules: []\n')).toEqual([expect.stringMatching(/used twice/)]);
    const [loc] = checkRuleFile('groups:\n  - name: a\n    rules:\n      - alert: A\n', 'ruleFiles.r.yaml');
    expect(loc).toMatchObject({ line: 4, column: 9 });
    expect(describeProblem(loc)).toMatch(/^ruleFiles\.r\.yaml line 4, column 9: /);
  });

  it('checks names, sizes, counts and templates', () => {
    const files = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}.yaml`, VALID_RULES]));
    expect(checkAlertingFiles({ ruleFiles: files(50) })).toEqual([]);
    expect(checkAlertingFiles({ ruleFiles: files(51) })[0]).toMatchObject({ file: 'ruleFiles', message: expect.stringMatching(/at most 50/) });
    expect(checkAlertingFiles({ ruleFiles: { '../etc': VALID_RULES } })[0].file).toBe('ruleFiles.../etc');
    expect(checkAlertingFiles({ ruleFiles: { 'a.yaml': 3 as unknown as string } })[0].message).toMatch(/string/);
    const big = 'groups: []\n#' + 'x'.repeat(128 * 1024);
    expect(checkAlertingFiles({ ruleFiles: { 'big.yaml': big } })[0].message).toMatch(/larger than 128 KiB/);
    const justFits = 'groups: []\n#' + 'x'.repeat(128 * 1024 - 12);
    expect(Buffer.byteLength(justFits)).toBe(128 * 1024);
    expect(checkAlertingFiles({ ruleFiles: { 'fits.yaml': justFits } })).toEqual([]);
    expect(checkAlertingFiles({ templateFiles: { 'a.tmpl': '  \n' } })[0]).toMatchObject({ file: 'templateFiles.a.tmpl', message: 'must not be empty' });
    expect(checkAlertingFiles({ alertingConfig: '' })).toEqual([]);
  });

  it('the shipped default rule file is valid', () => {
    expect(loadDefaultRules()).toMatch(/groups:/);
  });
});
