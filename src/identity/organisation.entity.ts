import { Column, Entity, PrimaryGeneratedColumn, VersionColumn } from 'typeorm';

export const ORGANISATION_TYPES = ['BUSINESS', 'ENTERPRISE', 'INDIVIDUAL', 'TRIAL'] as const;
export type OrganisationType = (typeof ORGANISATION_TYPES)[number];

@Entity('organisations')
export class OrganisationEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'text' }) slug: string;
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'text' }) type: OrganisationType;
  @Column({ type: 'text', nullable: true }) companyName: string | null;
  @Column({ type: 'text', nullable: true }) companyAddress: string | null;
  @Column({ type: 'text', nullable: true }) contactEmail: string | null;
  @Column({ type: 'text', nullable: true }) billingEmail: string | null;
  @Column({ type: 'text', nullable: true }) phoneNumber: string | null;
  @Column({ type: 'text', nullable: true }) vatCode: string | null;
  @Column({ type: 'boolean', default: false }) vatCodeValidated: boolean;
  @Column({ type: 'timestamptz', nullable: true }) vatCodeValidatedAt: Date | null;
  @Column({ type: 'boolean', default: false }) acceptedTerms: boolean;
  @Column({ type: 'timestamptz', nullable: true }) acceptedTermsAt: Date | null;
  @Column({ type: 'text', array: true, default: () => `'{}'` }) acceptedAgreements: string[];
  @Column({ type: 'boolean', default: false }) restrictedToAvailableCloudProviders: boolean;
  @Column({ type: 'bigint' }) clustersPerCustomer: number;
  /** Hours an upstream cluster runs a version before its downstream clusters are upgraded to it (0..720). */
  @Column({ type: 'integer', default: 24 }) upgradeSoakHours: number;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
  @VersionColumn() version: number;
}
