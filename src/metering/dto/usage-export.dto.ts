import { ApiProperty } from '@nestjs/swagger';
import { IsIn, IsString, Matches } from 'class-validator';
import { EXPORT_FORMATS, ExportFormat } from '../usage-export.service';

export class UsageExportQuery {
  @ApiProperty({ example: '2026-11', maxLength: 7, pattern: '^[0-9]{4}-(0[1-9]|1[0-2])$', description: 'A calendar month in UTC' })
  @IsString() @Matches(/^[0-9]{4}-(0[1-9]|1[0-2])$/, { message: 'period must be a month such as 2026-11' })
  period: string;

  @ApiProperty({ enum: EXPORT_FORMATS, example: 'focus-csv', description: 'focus-csv: RFC 4180 CSV with a header row; focus-json: a JSON array of rows' })
  @IsIn(EXPORT_FORMATS as unknown as string[], { message: `format must be one of ${EXPORT_FORMATS.join(', ')}` })
  format: ExportFormat;
}
