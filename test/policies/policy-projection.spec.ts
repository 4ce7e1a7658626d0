import 'reflect-metadata';
import { PolicyLanguage } from '../../src/policies/policy-language';
import { PolicyInput, policyVariableSchema } from '../../src/policies/policy-variables';

/** The projection a scan reads: the fields of `object`/`oldObject` a policy's expressions name. */
describe('policy object projection', () => {
  const language = new PolicyLanguage(policyVariableSchema());
  const fields = (...sources: string[]) => {
    const f = language.objectFields(sources);
    return f ? [...f].sort() : null;
  };

  it('names the top-level fields read through `.` and literal `[...]`, across expression and message expression', () => {
    expect(fields('object.highlyAvailable')).toEqual(['highlyAvailable']);
    expect(fields("object.nodePools.all(p, p.maxSize <= 20) && object['region'] == 'x'")).toEqual(['nodePools', 'region']);
    expect(fields('oldObject == null || semverCompare(object.version, oldObject.version) >= 0')).toEqual(['version']);
    expect(fields('null != oldObject && !oldObject.deleteProtection')).toEqual(['deleteProtection']);
    expect(fields('has(object.description)', "'region ' + object.region")).toEqual(['description', 'region']);
    expect(fields("request.operation != 'DELETE' || request.user.platformAdmin")).toEqual([]);
  });

  it('answers null (every field) when a cluster is read whole or under a computed key', () => {
    expect(fields('object == oldObject')).toBeNull();
    expect(fields("[object].all(o, o.highlyAvailable)")).toBeNull();
    expect(fields("object[request.operation == 'CREATE' ? 'region' : 'name'] == 'x'")).toBeNull();
  });

  it('evaluates a projected expression as the full one does', () => {
    const object = {
      highlyAvailable: false,
      region: 'us-east-1',
      nodePools: [{ name: 'big', minSize: 0, maxSize: 50, labels: {} }],
    } as unknown as PolicyInput['object'];
    const input = {
      object,
      oldObject: object,
      environment: { identity: 'e', name: 'production', slug: { slugValue: 'production' }, type: 'production', purpose: null, description: '' },
      organisation: { identity: 'o', name: 'acme', slug: { slugValue: 'acme' }, type: null, upgradeSoakHours: 24 },
      request: { operation: 'UPDATE', resource: 'clusters', user: { identity: null, username: 'system', platformAdmin: false } },
    } as unknown as PolicyInput;
    expect(language.compile("object.region in ['eu-west-1']")(input)).toBe(false);
    expect(language.compile("object.nodePools.filter(p, p.maxSize > 20).map(p, p.name).join(',')")(input)).toBe('big');
    expect(language.compile("oldObject.region == object.region && !object.highlyAvailable")(input)).toBe(true);
  });
});
