import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What an original client (the Go client, the Terraform provider) wrote under `/compat` in words the service
 * translates: the add-on names it used (with the values of those that have no add-on here), the case of its
 * pod security profile and the fields it left out that the service filled in (`cni`), so `/compat` reads them back as written (src/compat/written-forms.ts, ADR 0170). The row
 * goes with its cluster.
 */
export class CompatClusterForms1795400170000 implements MigrationInterface {
  name = 'CompatClusterForms1795400170000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE compat_cluster_forms (
         cluster_id bigint PRIMARY KEY REFERENCES clusters(id) ON DELETE CASCADE,
         addons jsonb,
         pod_security_standards_profile text,
         defaulted jsonb,
         modified_at timestamptz NOT NULL
       )`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE compat_cluster_forms`);
  }
}
