import 'reflect-metadata';
import * as fs from 'fs';
import * as path from 'path';
import { AppConfig } from '../../src/config/app-config';
import { settingsOf } from '../../src/config/setting';
import { type Region, withRegion } from './marked-region';

/** The configuration table of docs/configuration.md, generated from AppConfig's @Setting and class-validator metadata. */
export const CONFIG_DOC = path.resolve(__dirname, '../../docs/configuration.md');
export const CONFIG_REGION: Region = { name: 'config-table', command: 'npm run docs:config' };

export function renderConfigTable(): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  return [
    '| Variable | Default | Allowed | Meaning |',
    '|---|---|---|---|',
    ...settingsOf(AppConfig).map((s) => `| \`${s.name}\` | ${cell(s.defaultShown)} | ${cell(s.allowed)} | ${cell(s.meaning)} |`),
  ].join('\n');
}

if (require.main === module) {
  fs.writeFileSync(CONFIG_DOC, withRegion(fs.readFileSync(CONFIG_DOC, 'utf8'), CONFIG_REGION, renderConfigTable()));
  process.stdout.write(`wrote ${settingsOf(AppConfig).length} configuration variables into docs/configuration.md\n`);
}
