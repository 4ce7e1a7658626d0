import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import { PG_BIN } from './ha-stack';

/**
 * The Debian packages the failover test runs, installed with apt-get when missing (as root, else through sudo). Their
 * system services must not start: a policy-rc.d that refuses every start is put in place for the install (unless the
 * machine has one), and a service the install enabled is stopped and disabled afterwards.
 */
const PACKAGES: { name: string; binary: string; services: string[] }[] = [
  { name: 'etcd-server', binary: '/usr/bin/etcd', services: ['etcd'] },
  { name: 'patroni', binary: '/usr/bin/patroni', services: ['patroni'] },
  { name: 'haproxy', binary: '/usr/sbin/haproxy', services: ['haproxy'] },
  { name: 'postgresql-15', binary: `${PG_BIN}/postgres`, services: ['postgresql'] },
];
const POLICY_RC_D = '/usr/sbin/policy-rc.d';

export interface PackageVersions {
  [name: string]: string;
}

/** Installs what is missing; returns the installed version of each package and how long the install took. */
export function ensurePackages(log: (line: string) => void): { versions: PackageVersions; installedNow: string[]; installSeconds: number } {
  const missing = PACKAGES.filter((p) => !fs.existsSync(p.binary));
  const start = Date.now();
  if (missing.length > 0) {
    const sudo = process.getuid?.() === 0 ? [] : ['sudo'];
    const run = (args: string[]) => {
      const [cmd, ...rest] = [...sudo, ...args];
      execFileSync(cmd, rest, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    };
    log(`installing ${missing.map((p) => p.name).join(', ')} with apt-get`);
    const ownPolicy = !fs.existsSync(POLICY_RC_D);
    if (ownPolicy) run(['sh', '-c', `printf '#!/bin/sh\\nexit 101\\n' > ${POLICY_RC_D} && chmod 755 ${POLICY_RC_D}`]);
    try {
      run(['apt-get', 'update', '-qq']);
      run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...missing.map((p) => p.name)]);
    } finally {
      if (ownPolicy) run(['rm', '-f', POLICY_RC_D]);
    }
    const systemd = fs.existsSync('/run/systemd/system');
    for (const service of missing.flatMap((p) => p.services)) {
      const [cmd, ...rest] = [...sudo, ...(systemd ? ['systemctl', 'disable', '--now', service] : ['update-rc.d', service, 'disable'])];
      spawnSync(cmd, rest, { stdio: 'ignore' });
    }
  }
  const versions: PackageVersions = {};
  for (const p of PACKAGES) {
    const r = spawnSync('dpkg-query', ['-W', '-f=${Version}', p.name], { encoding: 'utf8' });
    versions[p.name] = r.status === 0 ? r.stdout.trim() : 'not from a package';
  }
  return { versions, installedNow: missing.map((p) => p.name), installSeconds: +((Date.now() - start) / 1000).toFixed(1) };
}
