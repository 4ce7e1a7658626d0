import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

export const PAT_TYPES = ['FULL_ACCESS', 'READ_ONLY'] as const;
export type PatType = (typeof PAT_TYPES)[number];

@Entity('personal_access_tokens')
export class PersonalAccessTokenEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) userId: number;
  @Column({ type: 'text' }) name: string;
  /** SHA-256 of the token; the token itself is never stored. */
  @Column({ type: 'char', length: 64 }) tokenHash: string;
  @Column({ type: 'text' }) type: PatType;
  @Column({ type: 'text', nullable: true }) ipRestriction: string | null;
  @Column({ type: 'timestamptz' }) expireAt: Date;
  @Column({ type: 'timestamptz', nullable: true }) revokedAt: Date | null;
  @Column({ type: 'timestamptz', nullable: true }) lastUsedAt: Date | null;
  @Column({ type: 'timestamptz' }) createdAt: Date;
}
