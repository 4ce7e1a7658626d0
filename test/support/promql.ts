import { parser } from '@prometheus-io/lezer-promql';

/** One series selector of a PromQL expression: the metric it names, its label matchers, and what encloses it. */
export interface PromqlSelector {
  metric: string;
  matchers: { label: string; op: string; value: string }[];
  /** The functions and aggregation operators around the selector, innermost first (`rate`, `sum`, `absent`, ...). */
  enclosing: string[];
}

/** A PromQL string literal's value ("...", '...' or `...`). */
function stringValue(literal: string): string {
  if (literal.startsWith('"')) return JSON.parse(literal) as string;
  return literal.slice(1, -1);
}

/**
 * The series selectors of a PromQL expression, read with the Prometheus project's own grammar (lezer-promql), so
 * label names in `by (...)`, function names and string values are never mistaken for metric names. Throws on a
 * syntax error, and on a selector that names no metric (`{__name__=~"..."}`), which no check could follow.
 */
export function selectorsOf(expr: string): PromqlSelector[] {
  const tree = parser.parse(expr);
  const selectors: PromqlSelector[] = [];
  const text = (from: number, to: number) => expr.slice(from, to);
  tree.iterate({
    enter(node) {
      if (node.type.isError) throw new Error(`PromQL syntax error at ${node.from} in: ${expr}`);
      if (node.name !== 'VectorSelector') return;
      const identifier = node.node.getChild('Identifier');
      if (!identifier) throw new Error(`a selector without a metric name (${text(node.from, node.to)}) in: ${expr}`);
      const matchers = node.node
        .getChild('LabelMatchers')
        ?.getChildren('UnquotedLabelMatcher')
        .map((m) => {
          const label = m.getChild('LabelName');
          const op = m.getChild('MatchOp');
          const value = m.getChild('StringLiteral');
          return { label: label ? text(label.from, label.to) : '', op: op ? text(op.from, op.to) : '', value: value ? stringValue(text(value.from, value.to)) : '' };
        });
      const enclosing: string[] = [];
      for (let at = node.node.parent; at; at = at.parent) {
        const name = at.name === 'FunctionCall' ? at.getChild('FunctionIdentifier') : at.name === 'AggregateExpr' ? at.getChild('AggregateOp') : null;
        if (name) enclosing.push(text(name.from, name.to));
      }
      selectors.push({ metric: text(identifier.from, identifier.to), matchers: matchers ?? [], enclosing });
    },
  });
  return selectors;
}

/** The labels of every `by (...)` clause in an expression: what an aggregating recording rule keeps. */
export function byLabelsOf(expr: string): string[] {
  const labels = new Set<string>();
  parser.parse(expr).iterate({
    enter(node) {
      if (node.name !== 'AggregateModifier' || !node.node.getChild('By')) return;
      for (const label of node.node.getChild('GroupingLabels')?.getChildren('LabelName') ?? []) labels.add(expr.slice(label.from, label.to));
    },
  });
  return [...labels];
}
