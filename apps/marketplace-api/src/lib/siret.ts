/** The Luhn checksum over a string of digits. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

// La Poste's establishments share SIREN 356 000 000 and do not pass Luhn; INSEE validates them by
// the sum of their digits being a multiple of 5.
const LA_POSTE_SIREN = '356000000';

/** A SIRET: 14 digits (spaces allowed on input) passing the Luhn check. */
export function siretValid(siret: string): boolean {
  if (!/^\d{14}$/.test(siret)) return false;
  if (siret.startsWith(LA_POSTE_SIREN) && siret !== '35600000000048') {
    const sum = [...siret].reduce((s, c) => s + Number(c), 0);
    return sum % 5 === 0;
  }
  return luhnValid(siret);
}

export function normaliseSiret(input: string): string {
  return input.replace(/[\s.]/g, '');
}
