import * as fs from 'fs';
import { CONFIG_DOC, CONFIG_REGION, renderConfigTable } from '../../scripts/docs/config-table';
import { regionOf } from '../../scripts/docs/marked-region';
import { AppConfig } from '../../src/config/app-config';
import { settingsOf } from '../../src/config/setting';

/** docs/configuration.md's table is what npm run docs:config generates from AppConfig (docs/adr/0092). */
describe('the configuration table', () => {
  it('is the one generated from the configuration class (run npm run docs:config when this fails)', () => {
    const committed = regionOf(fs.readFileSync(CONFIG_DOC, 'utf8'), CONFIG_REGION).trim();
    expect({ table: committed, fix: 'run npm run docs:config' }).toEqual({ table: renderConfigTable(), fix: 'run npm run docs:config' });
  });

  it('lists every variable the service reads, with a meaning, and the bounds validation enforces', () => {
    const settings = settingsOf(AppConfig);
    expect(settings.map((s) => s.name).sort()).toEqual(Object.keys(new AppConfig()).sort());
    for (const s of settings) expect({ name: s.name, meaningLength: s.meaning.length > 5 }).toEqual({ name: s.name, meaningLength: true });
    const byName = Object.fromEntries(settings.map((s) => [s.name, s]));
    expect(byName.RECONCILE_CONCURRENCY.allowed).toBe('integer 1..256');
    expect(byName.PROVISIONING_STEP_SECONDS.allowed).toBe('number 0..3600');
    expect(byName.LOG_LEVEL.allowed).toBe('one of `fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent`');
    expect(byName.BACKGROUND_JOBS_ENABLED.allowed).toBe('`true` or `false`');
    expect(byName.PORT.defaultShown).toBe('`8080`');
    expect(byName.DATABASE_URL.defaultShown).toBe('unset');
  });
});
