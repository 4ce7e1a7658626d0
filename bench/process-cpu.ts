import * as fs from 'fs';
import { Client } from 'pg';

/** CPU ms of a process: user + system (fields 14 and 15 of /proc/<pid>/stat, clock ticks of 10 ms), 0 when it is gone. */
export function processCpuMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/** The bench database's postmaster (the parent of a backend's process), found through a connection of its own. */
export async function postmasterPid(url: string): Promise<number> {
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    const [{ pid }] = (await db.query('SELECT pg_backend_pid() AS pid')).rows;
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } finally {
    await db.end();
  }
}

/** CPU ms of the database by process: the postmaster and its children alive now. */
export function databaseCpuMs(postmaster: number): Map<number, number> {
  const out = new Map<number, number>([[postmaster, processCpuMs(postmaster)]]);
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster) out.set(Number(entry), processCpuMs(Number(entry)));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/**
 * The database's CPU ms between two readings: per process alive at the end, what it used since the first reading
 * (all of it when it started since). A process that ended in between (a backend, an autovacuum worker) is missed,
 * never counted negative.
 */
export function databaseCpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let ms = 0;
  for (const [pid, cpu] of after) ms += Math.max(0, cpu - (before.get(pid) ?? 0));
  return ms;
}
