import { checkVAT, countries } from 'jsvat';

export interface VatCheck {
  valid: boolean;
  /** Normalised value (upper case, no separators) when valid. */
  value: string;
}

/** Format and check digits of a VAT number, with the maintained `jsvat` library (no network lookup). */
export function checkVatNumber(raw: string): VatCheck {
  const compact = raw.replace(/[\s.\-]/g, '').toUpperCase();
  const result = checkVAT(compact, countries);
  return { valid: result.isValid, value: result.value ?? compact };
}
