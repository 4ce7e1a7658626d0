import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsObject, IsOptional, IsString, MaxLength } from 'class-validator';
import { Secret, SecretOptions } from '../../common/secret-fields';
import { ALERTMANAGER_SECRET_PATHS } from '../alertmanager-secret-paths';
import { ALERTING_MAX_FILE_BYTES, ALERTING_MAX_FILES } from '../alerting-limits';

/** Receiver credentials in the Alertmanager configuration: MEMBER and above read them. */
export const ALERTING_CONFIG_SECRET: SecretOptions = {
  kind: 'document',
  readableFrom: 'MEMBER',
  document: { format: 'Alertmanager configuration', paths: ALERTMANAGER_SECRET_PATHS },
};

const FILES_DESCRIPTION =
  `File name (1 to 128 of A-Z a-z 0-9 . _ -) to content; at most ${ALERTING_MAX_FILES} files, ` +
  `each at most ${ALERTING_MAX_FILE_BYTES / 1024} KiB (the whole request body is also bounded by BODY_LIMIT_BYTES)`;

/** Alerting configuration as sent: replaces the stored one. */
export class AlertingConfigurationRequest {
  @ApiPropertyOptional({
    description:
      'Alert-manager configuration (YAML): top-level `route` (mapping with `receiver`) and `receivers` (non-empty list, each with `name`; ' +
      'every route receiver must name one). Empty or absent: no alert-manager configuration.',
    example: 'route:\n  receiver: team\nreceivers:\n  - name: team\n',
    maxLength: ALERTING_MAX_FILE_BYTES,
  })
  @Secret(ALERTING_CONFIG_SECRET)
  @IsOptional() @IsString() @MaxLength(ALERTING_MAX_FILE_BYTES)
  alertingConfig?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string', maxLength: ALERTING_MAX_FILE_BYTES },
    maxProperties: ALERTING_MAX_FILES,
    description: `Rule files (YAML with \`groups\`: list of {name, rules: list of {alert|record, expr}}). ${FILES_DESCRIPTION}. Left out: none`,
    default: {},
    example: { 'node.yaml': 'groups:\n  - name: node\n    rules:\n      - alert: NodeDown\n        expr: up == 0\n' },
  })
  @IsOptional() @IsObject()
  ruleFiles?: Record<string, string>;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string', maxLength: ALERTING_MAX_FILE_BYTES },
    maxProperties: ALERTING_MAX_FILES,
    description: `Notification template files (non-empty text). ${FILES_DESCRIPTION}. Left out: none`,
    default: {},
    example: { 'default.tmpl': '{{ define "title" }}{{ .CommonLabels.alertname }}{{ end }}' },
  })
  @IsOptional() @IsObject()
  templateFiles?: Record<string, string>;
}

/** Alerting configuration as stored. */
export class AlertingConfigurationResponse {
  @ApiProperty({ description: 'Alert-manager configuration YAML; empty string when none is configured' })
  @Secret(ALERTING_CONFIG_SECRET)
  alertingConfig: string;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) ruleFiles: Record<string, string>;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) templateFiles: Record<string, string>;
}

export class MessageResponse {
  @ApiProperty({ example: 'Alerting configuration replaced' }) message: string;
}

export class AlertingProblemDto {
  @ApiProperty({ example: 'ruleFiles.node.yaml', description: '`alertingConfig`, `ruleFiles.<name>` or `templateFiles.<name>`' })
  file: string;
  @ApiPropertyOptional({ type: 'integer', example: 3, description: '1-based line, when the problem has a location' }) line?: number;
  @ApiPropertyOptional({ type: 'integer', example: 5, description: '1-based column, when the problem has a location' }) column?: number;
  @ApiProperty({ example: 'groups[0].rules[0].expr is required' }) message: string;
}

export class AlertingValidationResponse {
  @ApiProperty() valid: boolean;
  @ApiProperty({ type: [AlertingProblemDto] }) errors: AlertingProblemDto[];
}
