import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { DriverCapabilities } from './driver-contract';

export const DRIVER_HEALTH_STATUSES = ['UNKNOWN', 'HEALTHY', 'UNHEALTHY'] as const;
export type DriverHealthStatus = (typeof DRIVER_HEALTH_STATUSES)[number];

/** A registered out-of-process cluster driver (migration ClusterDrivers). */
@Entity('cluster_drivers')
export class ClusterDriverEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'text' }) url: string;
  /** The Standard Webhooks signing secret, sealed by SecretBox with the context `clusterDriverSecretContext(identity)`. */
  @Column({ type: 'text' }) secretCiphertext: string;
  /** Cloud provider types it serves (when no driver is registered for the cluster's cloud profile). */
  @Column({ type: 'text', array: true, default: () => `'{}'` }) cloudProviders: string[];
  /** Cloud profile slugs it serves (before any driver registered for the provider). */
  @Column({ type: 'text', array: true, default: () => `'{}'` }) cloudProfiles: string[];
  @Column({ type: 'boolean', default: true }) enabled: boolean;
  @Column({ type: 'integer', default: 15000 }) timeoutMs: number;
  @Column({ type: 'integer', default: 16 }) maxInFlight: number;
  @Column({ type: 'text', default: 'UNKNOWN' }) healthStatus: DriverHealthStatus;
  @Column({ type: 'timestamptz', nullable: true }) healthCheckedAt: Date | null;
  @Column({ type: 'text', nullable: true }) healthMessage: string | null;
  @Column({ type: 'jsonb', nullable: true }) capabilities: DriverCapabilities | null;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}

/** The SecretBox context of a driver's signing secret: a ciphertext cannot be moved to another driver. */
export const clusterDriverSecretContext = (identity: string) => `cluster-driver:${identity}`;
