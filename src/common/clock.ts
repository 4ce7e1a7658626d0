import { Injectable } from '@nestjs/common';

/** Source of "now" for every rule that depends on time, so tests move time instead of sleeping. */
@Injectable()
export class Clock {
  private offsetMs = 0;
  private frozen: Date | null = null;

  now(): Date {
    if (this.frozen) return new Date(this.frozen.getTime());
    return new Date(Date.now() + this.offsetMs);
  }

  /** Test hook: shift time forward (or back) by ms. */
  advance(ms: number): void {
    if (this.frozen) this.frozen = new Date(this.frozen.getTime() + ms);
    else this.offsetMs += ms;
  }

  /** Test hook: pin time at a given instant (null releases it). */
  set(at: Date | null): void {
    this.frozen = at ? new Date(at.getTime()) : null;
    if (!at) this.offsetMs = 0;
  }
}
