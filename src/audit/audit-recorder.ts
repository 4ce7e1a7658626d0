import { Injectable } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import type { AuditDetails } from './audit-event.entity';

export interface AuditRef {
  id: number;
  slug: string;
}

/** What a service says about the change it made; the audit interceptor writes it. */
export interface AuditEntry {
  /** `<RESOURCE>_<ACTION>` upper snake case, e.g. CLUSTER_CREATED. */
  type: string;
  organisation?: AuditRef | null;
  environment?: AuditRef | null;
  cluster?: AuditRef | null;
  nodePool?: { id: number; name: string } | null;
  cloudAccountName?: string | null;
  referencedEntityIdentity?: string | null;
  details?: AuditDetails;
  /** Names the thing changed in the activity sentence, e.g. "production/web". */
  subject?: string;
  /** Overrides the generated activity sentence. */
  message?: string;
}

const KEY = 'audit.entries';

/** Collects the audit entries of the current request (held in the request's CLS context). */
@Injectable()
export class AuditRecorder {
  constructor(private readonly cls: ClsService) {}

  record(entry: AuditEntry): void {
    if (!this.cls.isActive()) throw new Error('AuditRecorder.record called outside a request or job context');
    const list = this.cls.get<AuditEntry[]>(KEY) ?? [];
    list.push(entry);
    this.cls.set(KEY, list);
  }

  take(): AuditEntry[] {
    if (!this.cls.isActive()) return [];
    const list = this.cls.get<AuditEntry[]>(KEY) ?? [];
    this.cls.set(KEY, []);
    return list;
  }
}
