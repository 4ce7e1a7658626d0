import { Injectable } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { Actor, actorOf, currentPrincipal, SYSTEM_ACTOR } from '../identity/principal';
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
const WRITTEN = 'audit.written';

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

  /** An entry the change wrote itself, in its own statement (AuditService.inStatement): counted, not written again. */
  recordWritten(entry: AuditEntry): void {
    if (!this.cls.isActive()) throw new Error('AuditRecorder.recordWritten called outside a request or job context');
    this.cls.set(WRITTEN, [...(this.cls.get<AuditEntry[]>(WRITTEN) ?? []), entry]);
  }

  /** The entries still to be written (reset). */
  take(): AuditEntry[] {
    return this.takeAll().pending;
  }

  /** The entries still to be written and those the change wrote itself; both are reset. */
  takeAll(): { pending: AuditEntry[]; written: AuditEntry[] } {
    if (!this.cls.isActive()) return { pending: [], written: [] };
    const pending = this.cls.get<AuditEntry[]>(KEY) ?? [];
    const written = this.cls.get<AuditEntry[]>(WRITTEN) ?? [];
    this.cls.set(KEY, []);
    this.cls.set(WRITTEN, []);
    return { pending, written };
  }

  /** Who the current request acts as (the principal the guard stored), or the system in background work. */
  actor(): Actor {
    const principal = currentPrincipal(this.cls);
    return principal?.user ? actorOf(principal) : SYSTEM_ACTOR;
  }
}
