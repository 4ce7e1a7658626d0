import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { lexer, type Tokens } from 'marked';
import { parse } from 'yaml';
import { MetricsService } from '../../src/metrics/metrics.service';
import { headingsOf } from '../../scripts/docs/markdown';
import { renderRuleFile, ruleGroups, RULE_FILE, type RuleGroup } from '../../scripts/deploy/prometheus-rules';
import { byLabelsOf, selectorsOf, type PromqlSelector } from '../support/promql';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * The alerting and recording rules (deploy/base/prometheusrule.yaml) and the Grafana dashboard
 * (deploy/grafana/cluster-management-service.json) against the service's real metrics: `promtool check rules` and
 * `promtool test rules` (Debian's prometheus package; npm test's pretest, scripts/test-tools.sh, installs it when missing), every runbook present in
 * docs/operations.md, and every expression naming only series the service exports (read from a running app's
 * registry) or the rules record, with labels those series carry.
 */
const ROOT = path.resolve(__dirname, '../..');
const RULE_TESTS = path.join(ROOT, 'deploy/prometheus/rules.test.yaml');
const DASHBOARD = path.join(ROOT, 'deploy/grafana/cluster-management-service.json');
const OPERATIONS = path.join(ROOT, 'docs/operations.md');

/** Labels Prometheus (and the Prometheus Operator) put on every series of a target. */
const TARGET_LABELS = ['namespace', 'pod', 'instance', 'job', 'container', 'service', 'endpoint'];
/** Series Prometheus itself makes. */
const PROMETHEUS_SERIES: Record<string, string[] | 'any'> = { ALERTS: 'any', up: [] };
/**
 * Fleet-wide gauges: one figure for the whole database, exported by whichever replica computes it. Summing them over
 * replicas counts the fleet once per replica, so every rule and panel aggregates them with `max`.
 */
const FLEET_GAUGES = ['cms_clusters', 'cms_scheduled_upgrades', 'cms_webhook_outbox_lag_seconds', 'cms_reconciler_oldest_observation_age_seconds'];
/**
 * Labels the rules use that the metrics do not carry yet, each with the metric's label to come. Empty: the background
 * loops' label is `loop` and the pools' gauge has `pool` (issue 39). A check below fails when an entry is no longer
 * needed.
 */
const PENDING_LABELS: Record<string, string> = {};

interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

function promtool(args: string[], binary = process.env.PROMTOOL || 'promtool'): string {
  try {
    return execFileSync(binary, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (err.code === 'ENOENT') {
      throw new Error(
        `promtool not found (${binary}): the Prometheus rules are checked and unit-tested with promtool. Install Debian's ` +
          'prometheus package (apt-get install --no-install-recommends prometheus; only its promtool is used), which ' +
          'the pretest of npm test (scripts/test-tools.sh) does when promtool is missing, or set PROMTOOL to a promtool binary.',
      );
    }
    throw new Error(`promtool ${args.join(' ')} failed:\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  }
}

/** Grafana's variables replaced by values, so a panel's query is plain PromQL. */
function grafanaToPromql(expr: string): string {
  return expr.replace(/\$__rate_interval|\$__interval|\$__range/g, '5m').replace(/\$\{?namespace\}?/g, 'cms');
}

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: { expr: string; datasource?: { uid: string } }[];
  panels?: Panel[];
}

describe('Prometheus rules and Grafana dashboard', () => {
  let t: TestApp;
  /** Series name -> the labels the service gives it. */
  const exported = new Map<string, Set<string>>();
  const groups: RuleGroup[] = ruleGroups();
  const rules: Rule[] = groups.flatMap((g) => g.rules);
  const alerts = rules.filter((r) => r.alert);
  /** Recorded series -> the labels they keep (their `by` clauses). */
  const recorded = new Map(rules.filter((r) => r.record).map((r) => [r.record!, new Set([...byLabelsOf(r.expr), ...TARGET_LABELS])]));
  const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as {
    uid: string;
    title: string;
    panels: Panel[];
    templating: { list: { name: string; type: string; query: string | { query: string } }[] };
  };
  const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  const dashboardExprs = panels.flatMap((p) => (p.targets ?? []).map((target) => ({ panel: p.title, expr: grafanaToPromql(target.expr) })));

  beforeAll(async () => {
    t = await startTestApp();
    // prom-client's typings declare `type` a numeric enum and leave `labelNames` out; at run time both are there,
    // `type` as 'counter', 'gauge', 'histogram' or 'summary'.
    // This process's metrics and the fleet-wide gauges (exported by the replica holding the fleet metrics lock).
    const service = t.get(MetricsService);
    const metrics = [...service.registry.getMetricsAsArray(), ...service.fleetRegistry.getMetricsAsArray()] as unknown as {
      name: string;
      type: string;
      labelNames?: readonly string[];
    }[];
    for (const metric of metrics) {
      const labels = [...(metric.labelNames ?? [])];
      const add = (name: string, extra: string[] = []) => exported.set(name, new Set([...labels, ...extra, ...TARGET_LABELS]));
      if (metric.type === 'histogram') {
        add(`${metric.name}_bucket`, ['le']);
        add(`${metric.name}_sum`);
        add(`${metric.name}_count`);
      } else if (metric.type === 'summary') {
        add(metric.name, ['quantile']);
        add(`${metric.name}_sum`);
        add(`${metric.name}_count`);
      } else {
        add(metric.name);
      }
    }
  });
  afterAll(() => t.close());

  /** What is wrong with one selector: an unknown series, or a label the series does not carry. */
  function selectorProblem(s: PromqlSelector): string | undefined {
    const known = PROMETHEUS_SERIES[s.metric];
    if (known === 'any') return undefined;
    const labels = known ? new Set([...known, 'job', 'instance']) : (recorded.get(s.metric) ?? exported.get(s.metric));
    if (!labels) return `${s.metric}: no such series (neither exported by the service nor recorded by a rule)`;
    const base = s.metric.replace(/_(bucket|sum|count)$/, '');
    const pending = PENDING_LABELS[s.metric] ?? PENDING_LABELS[base];
    const unknown = s.matchers.map((m) => m.label).filter((l) => !labels.has(l) && l !== pending);
    return unknown.length ? `${s.metric}: no label ${unknown.join(', ')}` : undefined;
  }
  const problemsOf = (expr: string) => selectorsOf(expr).map(selectorProblem).filter((p): p is string => !!p);

  describe('rules', () => {
    it('deploy/prometheus/rules.yaml holds the PrometheusRule groups (npm run deploy:rules writes it)', () => {
      expect(fs.readFileSync(RULE_FILE, 'utf8')).toBe(renderRuleFile());
    });

    it('are accepted by promtool check rules', () => {
      const out = promtool(['check', 'rules', RULE_FILE]);
      expect(out).toContain(`SUCCESS: ${rules.length} rules found`);
    });

    it('pass their unit tests (promtool test rules deploy/prometheus/rules.test.yaml)', () => {
      expect(promtool(['test', 'rules', RULE_TESTS])).toMatch(/SUCCESS/);
    });

    it('fail clearly when promtool is missing', () => {
      expect(() => promtool(['--version'], '/nonexistent/promtool')).toThrow(/promtool not found.*Debian's prometheus package.*PROMTOOL/s);
    });

    it('fire each alert in at least one unit test case', () => {
      const cases = (parse(fs.readFileSync(RULE_TESTS, 'utf8')) as { tests: { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[] }).tests;
      const fired = new Set(cases.flatMap((c) => (c.alert_rule_test ?? []).filter((a) => a.exp_alerts?.length).map((a) => a.alertname)));
      expect(alerts.map((a) => a.alert).filter((name) => !fired.has(name!))).toEqual([]);
    });

    it('give every alert a severity, a summary, a description and a runbook in docs/operations.md', () => {
      const anchors = new Map(headingsOf(fs.readFileSync(OPERATIONS, 'utf8')).map((h) => [h.anchor, h.text]));
      for (const a of alerts) {
        expect({ alert: a.alert, severity: a.labels?.severity }).toEqual({ alert: a.alert, severity: expect.stringMatching(/^(critical|warning)$/) });
        expect(a.annotations).toMatchObject({ summary: expect.any(String), description: expect.any(String) });
        const [file, anchor] = (a.annotations?.runbook_url ?? '').split('#');
        expect({ alert: a.alert, file, heading: anchors.get(anchor) }).toEqual({ alert: a.alert, file: 'docs/operations.md', heading: a.alert });
      }
    });

    it("runbooks' SQL runs on the service's schema (read-only)", async () => {
      const blocks = lexer(fs.readFileSync(OPERATIONS, 'utf8'))
        .filter((tok): tok is Tokens.Code => tok.type === 'code' && tok.lang === 'sql')
        .map((tok) => tok.text);
      expect(blocks.length).toBeGreaterThanOrEqual(4);
      for (const sql of blocks) {
        await t.db.transaction(async (m) => {
          await m.query('SET TRANSACTION READ ONLY');
          await expect(m.query(sql)).resolves.toBeDefined();
        });
      }
    });

    it('name only series the service exports or the rules record, with labels they carry', () => {
      expect(exported.size).toBeGreaterThan(20);
      expect(rules.flatMap((r) => problemsOf(r.expr).map((p) => `${r.record ?? r.alert}: ${p}`))).toEqual([]);
    });

    it('find an unknown series or label (the check can fail)', () => {
      expect(problemsOf('sum(rate(cms_http_requests_total[5m]))')).toEqual([expect.stringMatching(/cms_http_requests_total: no such series/)]);
      expect(problemsOf('cms_http_request_duration_seconds_count{job="reconciler",path="/x"}')).toEqual(['cms_http_request_duration_seconds_count: no label path']);
      expect(() => selectorsOf('sum(rate(cms_clusters[5m])')).toThrow(/syntax error/);
    });

    it('aggregate the fleet-wide gauges with max, never sum', () => {
      const uses = [...rules.map((r) => r.expr), ...dashboardExprs.map((d) => d.expr)]
        .flatMap((expr) => selectorsOf(expr))
        .filter((s) => FLEET_GAUGES.includes(s.metric));
      expect(new Set(uses.map((s) => s.metric))).toEqual(new Set(FLEET_GAUGES));
      for (const s of uses) expect({ metric: s.metric, aggregation: s.enclosing[0] }).toEqual({ metric: s.metric, aggregation: 'max' });
    });

    it('use labels the service does not export yet only where a pending rename promises them', () => {
      // Once a metric carries its label, the entry in PENDING_LABELS is no longer needed: remove it.
      for (const [metric, label] of Object.entries(PENDING_LABELS)) {
        const series = exported.get(metric) ?? exported.get(`${metric}_count`);
        expect({ metric, exported: !!series }).toEqual({ metric, exported: true });
        expect({ metric, label, alreadyThere: series!.has(label) }).toEqual({ metric, label, alreadyThere: false });
      }
    });
  });

  describe('dashboard', () => {
    it('is a Grafana dashboard with a Prometheus data source variable and a namespace variable', () => {
      expect(dashboard).toMatchObject({ uid: 'cluster-management-service', title: 'Cluster Management Service' });
      expect(dashboard.templating.list.map((v) => `${v.name}:${v.type}`)).toEqual(['datasource:datasource', 'namespace:query']);
      expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
      for (const p of panels.filter((p) => p.type !== 'row')) {
        expect({ panel: p.title, uid: p.datasource?.uid, targets: (p.targets ?? []).length > 0 }).toEqual({ panel: p.title, uid: '${datasource}', targets: true });
      }
    });

    it('queries only series the service exports or the rules record, with labels they carry', () => {
      expect(dashboardExprs.length).toBeGreaterThan(20);
      expect(dashboardExprs.flatMap(({ panel, expr }) => problemsOf(expr).map((p) => `${panel}: ${p}`))).toEqual([]);
      for (const v of dashboard.templating.list.filter((v) => v.type === 'query')) {
        const query = typeof v.query === 'string' ? v.query : v.query.query;
        const [, metric, label] = /^label_values\((\w+), *(\w+)\)$/.exec(query) ?? [];
        expect(exported.get(metric)?.has(label)).toBe(true);
      }
    });

    it('shows what each alert looks at (one of its series at least)', () => {
      const shown = new Set(dashboardExprs.flatMap(({ expr }) => selectorsOf(expr).map((s) => s.metric)));
      const unseen = alerts.filter((a) => !selectorsOf(a.expr).some((s) => shown.has(s.metric))).map((a) => a.alert);
      expect(unseen).toEqual([]);
    });
  });
});
