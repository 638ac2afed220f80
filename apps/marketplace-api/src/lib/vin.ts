/**
 * Vehicle identification numbers (ISO 3779) and French registration plates.
 */

const VIN_CHARS = /^[A-HJ-NPR-Z0-9]{17}$/;
// Position 10: the model-year code never uses I, O, Q, U, Z or 0.
const YEAR_CODES = 'ABCDEFGHJKLMNPRSTVWXY123456789';
const TRANSLITERATION: Record<string, number> = {
  A: 1, B: 2, C: 3, D: 4, E: 5, F: 6, G: 7, H: 8, J: 1, K: 2, L: 3, M: 4, N: 5, P: 7, R: 9,
  S: 2, T: 3, U: 4, V: 5, W: 6, X: 7, Y: 8, Z: 9,
};
const WEIGHTS = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2];

/** The check digit (position 9) that North American rules (49 CFR 565) require. */
export function vinCheckDigit(vin: string): string {
  let sum = 0;
  for (let i = 0; i < 17; i++) {
    const c = vin[i]!;
    const value = c >= '0' && c <= '9' ? Number(c) : (TRANSLITERATION[c] ?? 0);
    sum += value * WEIGHTS[i]!;
  }
  const remainder = sum % 11;
  return remainder === 10 ? 'X' : String(remainder);
}

/** WMIs starting 1–5 are North American manufacturers, which must carry the check digit. */
function northAmerican(vin: string): boolean {
  return /^[1-5]/.test(vin);
}

export function normaliseVin(input: string): string {
  return input.replace(/[\s-]/g, '').toUpperCase();
}

/** Why a VIN is invalid, or null when it is valid. */
export function vinProblem(vin: string): string | null {
  if (vin.length !== 17) return 'Must be 17 characters';
  if (/[IOQ]/.test(vin)) return 'Must not contain the letters I, O or Q';
  if (!VIN_CHARS.test(vin)) return 'Must contain only letters and digits';
  if (!YEAR_CODES.includes(vin[9]!)) return 'Position 10 is not a valid model-year code';
  // European manufacturers are not required to use position 9 as a check digit, and many do not.
  if (northAmerican(vin) && vin[8] !== vinCheckDigit(vin)) return 'The check digit (position 9) does not match';
  return null;
}

/**
 * The model years the code at position 10 may stand for (it repeats every 30 years), most recent
 * first, none later than next year.
 */
export function vinModelYears(vin: string, now = new Date()): number[] {
  const index = YEAR_CODES.indexOf(vin[9] ?? '');
  if (index < 0) return [];
  const latest = now.getUTCFullYear() + 1;
  const years: number[] = [];
  for (let year = 1980 + index; year <= latest; year += 30) years.unshift(year);
  return years;
}

/** The World Manufacturer Identifier (first three characters). */
export function vinWmi(vin: string): string {
  return vin.slice(0, 3);
}

// SIV (since 2009): AB-123-CD. Letters I, O and U are never used; SS and WW blocks are not issued
// as permanent series (WW is temporary registration), so they are accepted only as WW.
const SIV = /^([A-HJ-NP-TV-Z]{2})-?(\d{3})-?([A-HJ-NP-TV-Z]{2})$/;
// FNI (before 2009): 1 to 4 digits, 1 to 3 letters, then the department (01–95, 2A, 2B, 971–976).
const FNI = /^(\d{1,4})([A-HJ-NP-Z]{1,3})(0[1-9]|[1-8]\d|9[0-5]|2A|2B|97[1-6])$/;

/** A French plate in its canonical spelling (`AB-123-CD`, `1234 AB 56`), or null when it is neither format. */
export function normalisePlate(input: string): string | null {
  const compact = input.toUpperCase().replace(/[\s.-]/g, '');
  const siv = SIV.exec(compact);
  if (siv) {
    if (siv[1] === 'SS' || siv[3] === 'SS' || siv[2] === '000') return null;
    return `${siv[1]}-${siv[2]}-${siv[3]}`;
  }
  const fni = FNI.exec(compact);
  if (fni) return `${fni[1]} ${fni[2]} ${fni[3]}`;
  return null;
}
