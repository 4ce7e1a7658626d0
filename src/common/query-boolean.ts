import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional } from 'class-validator';

/** Query strings carry "true"/"false": turned into booleans, anything else left for @IsBoolean to refuse. */
export const QueryBoolean = () =>
  Transform(({ value }) => {
    if (value === undefined || value === '') return undefined;
    if (value === true || value === 'true') return true;
    if (value === false || value === 'false') return false;
    return value;
  });

/** An optional boolean query parameter, documented, converted and validated (400 naming it otherwise). */
export const BooleanQueryParam = (name: string, description: string) =>
  applyDecorators(
    ApiPropertyOptional({ name, type: Boolean, default: false, description }),
    IsOptional(),
    QueryBoolean(),
    IsBoolean({ message: `${name} must be true or false` }),
  );
