import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptions } from '@nestjs/swagger';
import { ValidateBy, ValidationOptions } from 'class-validator';

/**
 * Characters a name must not hold: control characters (C0, C1) and invisible format characters (Unicode category
 * Cf: the bidirectional embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069, the marks U+200E, U+200F
 * and U+061C, zero-width spaces, word joiners, the BOM, ...). They make a name read differently from what it is
 * ("Trojan Source"): `admin\u202Egnp.exe`. The zero-width joiner and non-joiner stay allowed: scripts and emoji need them.
 */
const HIDDEN = /(?![\u200C\u200D])[\p{Cc}\p{Cf}]/u;

/** The first hidden character of a text and its position (in characters, from 0), or null. */
export function hiddenCharacter(value: string): { codePoint: string; index: number } | null {
  const m = HIDDEN.exec(value);
  if (!m) return null;
  const index = [...value.slice(0, m.index)].length;
  return { codePoint: `U+${m[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`, index };
}

/** The sentence the OpenAPI document adds to a plain-text name. */
export const PLAIN_TEXT_SENTENCE = 'Control characters and invisible formatting characters (such as the bidirectional override U+202E) are refused.';

/**
 * A name or display name shown to people: refuses hidden characters with a 400 naming the field, the character and
 * where it is. Marks the OpenAPI property (`x-plain-text`; src/common/openapi-polish.ts adds the sentence).
 */
export function IsPlainText(options?: ValidationOptions): PropertyDecorator {
  return applyDecorators(
    ValidateBy(
      {
        name: 'isPlainText',
        validator: {
          validate: (value: unknown) => typeof value !== 'string' || hiddenCharacter(value) === null,
          defaultMessage: (args) => {
            const found = typeof args?.value === 'string' ? hiddenCharacter(args.value) : null;
            const where = found ? ` (${found.codePoint} at position ${found.index + 1})` : '';
            return `${args?.property ?? 'name'} must not contain control or invisible formatting characters${where}; write it in plain text`;
          },
        },
      },
      options,
    ),
    ApiProperty({ 'x-plain-text': true } as ApiPropertyOptions),
  );
}
