import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, MetadataStorage, validateSync } from 'class-validator';
import { ClusterDetailQuery, ClusterOrgListQuery, UpdateClusterRequest } from '../../src/clusters/dto/cluster.dto';
import { FieldValidationPipe } from '../../src/common/field-validation.pipe';
import { PageQueryDto } from '../../src/common/paging';

describe('class-validator metadata cache (src/common/validation-metadata-cache.ts)', () => {
  const storage = getMetadataStorage();
  const uncached = (target: Function, groups?: string[]) =>
    MetadataStorage.prototype.getTargetValidationMetadatas.call(storage, target, '', false, false, groups);

  it('is installed by the validation pipe and answers what class-validator computes, own and inherited rules, per group', () => {
    expect(new FieldValidationPipe()).toBeDefined();
    expect(storage.getTargetValidationMetadatas).not.toBe(MetadataStorage.prototype.getTargetValidationMetadatas);
    for (const cls of [ClusterOrgListQuery, ClusterDetailQuery, PageQueryDto, UpdateClusterRequest]) {
      for (const groups of [undefined, ['x']]) {
        const first = storage.getTargetValidationMetadatas(cls, '', false, false, groups);
        expect(first).toEqual(uncached(cls, groups));
        expect(storage.getTargetValidationMetadatas(cls, '', false, false, groups)).toBe(first); // memoised
      }
    }
    // ClusterOrgListQuery inherits page/size/sort from PageQueryDto.
    const names = new Set(storage.getTargetValidationMetadatas(ClusterOrgListQuery, '', false, false).map((m) => m.propertyName));
    expect([...names]).toEqual(expect.arrayContaining(['page', 'size', 'sort', 'maintenanceSchedule']));
  });

  it('validation still finds own and inherited violations', () => {
    const bad = plainToInstance(ClusterOrgListQuery, { sort: ['name;drop'], maintenanceSchedule: 'nope' });
    const fields = validateSync(bad).map((e) => e.property);
    expect(fields.sort()).toEqual(['maintenanceSchedule', 'sort']);
    expect(validateSync(plainToInstance(ClusterOrgListQuery, { sort: ['name,desc'] }))).toEqual([]);
  });
});
