import * as semver from 'semver';
import { CatalogFile, readCatalogFile, validateCatalogFile } from '../../src/catalog/catalog-loader.service';
import { CLOUD_PROVIDER_TYPES } from '../../src/catalog/cloud-provider.entity';

describe('data/catalog.yaml', () => {
  const file = readCatalogFile();
  const clone = (): CatalogFile => JSON.parse(JSON.stringify(file));

  it('is consistent', () => {
    expect(validateCatalogFile(file)).toEqual([]);
  });

  it('has a provider for each of the ten type values, and real platforms have regions, zones and node types', () => {
    expect(file.cloudProviders.map((p) => p.type).sort()).toEqual([...CLOUD_PROVIDER_TYPES].sort());
    for (const p of file.cloudProviders.filter((x) => x.type.startsWith('platform_'))) {
      expect(p.regions.length).toBeGreaterThanOrEqual(3);
      expect(p.nodeTypes.length).toBeGreaterThanOrEqual(3);
      for (const r of p.regions) expect(r.availabilityZones.length).toBeGreaterThanOrEqual(1);
    }
  });

  it('has at least three minors with several patches, some unavailable, and channels on available versions', () => {
    const minors = new Map<string, number>();
    for (const v of file.clusterVersions) {
      const key = `${semver.major(v.version)}.${semver.minor(v.version)}`;
      minors.set(key, (minors.get(key) ?? 0) + 1);
    }
    expect(minors.size).toBeGreaterThanOrEqual(3);
    expect([...minors.values()].every((n) => n >= 2)).toBe(true);
    expect(file.clusterVersions.some((v) => !v.available)).toBe(true);
    expect(file.updateChannels.length).toBeGreaterThanOrEqual(1);
    expect(file.addons.length).toBeGreaterThanOrEqual(1);
  });

  it('names the problems of an inconsistent file', () => {
    const c = clone();
    c.cloudProviders = c.cloudProviders.filter((p) => p.type !== 'none');
    c.cloudProfiles[1].regions.push('atlantis-1');
    c.clusterVersions.push({ version: 'v1.40', kubernetesVersion: 'v1.40', available: true, note: '' });
    c.updateChannels.push({ name: 'x', kubernetesClusterVersion: '1.32.2', available: true });
    c.addons.push({ ...c.addons[0] });
    const problems = validateCatalogFile(c);
    expect(problems).toEqual(
      expect.arrayContaining([
        "provider type 'none' is missing",
        expect.stringMatching(/unknown region 'atlantis-1'/),
        "cluster version 'v1.40' is not semver",
        "update channel 'x' names unavailable version '1.32.2'",
        `duplicate add-on '${c.addons[0].name}'`,
      ]),
    );
  });
});
