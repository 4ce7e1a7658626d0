/** The audit's expression: 27 doublings of the cluster name (the process ran out of memory and aborted). */
export const AUDIT = `[object.name]${'.map(a, a + a)'.repeat(27)}[0].size() > 0`;
/** 24 doublings and ten size() calls (6.7 s on the event loop, with /health waiting behind it). */
export const AUDIT_24 = `[object.name]${'.map(a, a + a)'.repeat(24)}.map(a, ${Array.from({ length: 10 }, () => 'a.size()').join(' + ')})[0] > 0`;

/** Growth expressions of every kind the audit named, each within the parser's limits. */
export const GROWTH: Record<string, string> = {
  'map doubling': AUDIT,
  'map doubling with size() calls': AUDIT_24,
  'string repetition through join': `[object.name]${'.map(a, [a, a, a, a, a, a, a, a].join(a))'.repeat(6)}[0].size() > 0`,
  'join of a split': "object.name.split('').map(c, object.name).join('').size() > 0",
  'list concatenation in comprehensions': `[object.nodePools]${'.map(l, l + l + l + l)'.repeat(8)}.size() > 0`,
  'nested exists over a product': 'object.nodePools.exists(a, object.nodePools.exists(b, a.labels == b.labels))',
  'nested all over a product of strings': "object.nodePools.all(a, object.nodePools.all(b, (a.name + b.name + a.nodeSize).contains('x')))",
  'deep ternaries': `cel.bind(s, object.name, ${'cel.bind(s, s.size() > 0 ? s + s : s + s, '.repeat(10)}s${')'.repeat(10)}).size() > 0`,
  'nested ternaries': `[object.name]${'.map(a, a.size() > 1 ? (a.size() > 2 ? a + a + a : a + a) : a)'.repeat(8)}[0].size() > 0`,
  'bind doubling': `${'cel.bind(s, s + s, '.repeat(9).replace('s + s', 'object.name + object.name')}s${')'.repeat(9)}.size() > 0`,
  'hex growth': `${'bytes('.repeat(10)}object.name${').hex()'.repeat(10)}.size() > 0`,
  'case mapping growth': `object.name${'.upperAscii().lowerAscii()'.repeat(8)}.size() > 0`,
};

/** How a refusal of growth reads: the sub-expression that may pass the size cap, or the costliest part. */
export const REFUSED =
  /(may build a value of (\d+ characters or elements|unbounded size) \(estimated cost \d+\); at most 1048576|estimated cost \d+ exceeds the limit 100000 .*most of it is `.+` \(line 1, column \d+\), estimated at \d+)/;

/** 100 literal numbers: comprehensions over it cost real work whatever the clusters hold. */
export const HUNDRED = `[${Array.from({ length: 100 }, (_, i) => i).join(', ')}]`;
