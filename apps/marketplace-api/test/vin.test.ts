import { describe, expect, it } from 'vitest';
import { normalisePlate, normaliseVin, vinCheckDigit, vinModelYears, vinProblem } from '../src/lib/vin.js';

describe('VIN', () => {
  it('accepts European VINs without a check digit and North American ones with a right one', () => {
    // Renault Clio (VF1), Volkswagen Golf (WVW), Peugeot (VF3): position 9 is not a check digit.
    expect(vinProblem('VF1RFB00X56789012')).toBeNull();
    expect(vinProblem('WVWZZZAUZKW123456')).toBeNull();
    // A Honda built in the United States: the check digit at position 9 is right.
    expect(vinCheckDigit('1HGCM82633A004352')).toBe('3');
    expect(vinProblem('1HGCM82633A004352')).toBeNull();
  });

  it('refuses a wrong North American check digit, bad lengths, I/O/Q and bad model-year codes', () => {
    expect(vinProblem('1HGCM82643A004352')).toMatch(/check digit/);
    expect(vinProblem('VF1RFB00X5678901')).toMatch(/17/);
    expect(vinProblem('VF1RFB00X5678901O')).toMatch(/I, O or Q/);
    expect(vinProblem('VF1RFB00XU6789012')).toMatch(/model-year/);
    expect(vinProblem('VF1RFB00X06789012')).toMatch(/model-year/);
    expect(vinProblem('VF1RFB00X5678901!')).toMatch(/letters and digits/);
  });

  it('normalises case and spacing, and decodes the model-year candidates', () => {
    expect(normaliseVin(' vf1rfb00x5 6789012 ')).toBe('VF1RFB00X56789012');
    expect(vinModelYears('WVWZZZAUZKW123456', new Date('2026-06-01'))).toEqual([2019, 1989]);
    expect(vinModelYears('VF1RFB00XA6789012', new Date('2026-06-01'))).toEqual([2010, 1980]);
    expect(vinModelYears('VF1RFB00X56789012', new Date('2026-06-01'))).toEqual([2005]);
  });
});

describe('French plates', () => {
  it('normalises both series', () => {
    expect(normalisePlate('ab123cd')).toBe('AB-123-CD');
    expect(normalisePlate('AB 123 CD')).toBe('AB-123-CD');
    expect(normalisePlate('AB-123-CD')).toBe('AB-123-CD');
    expect(normalisePlate('1234 AB 56')).toBe('1234 AB 56');
    expect(normalisePlate('1234ab56')).toBe('1234 AB 56');
    expect(normalisePlate('12 ABC 2A')).toBe('12 ABC 2A');
    expect(normalisePlate('123-AB-974')).toBe('123 AB 974');
  });

  it('refuses what neither series issues', () => {
    expect(normalisePlate('AI-123-CD')).toBeNull(); // I is never used
    expect(normalisePlate('AB-000-CD')).toBeNull();
    expect(normalisePlate('SS-123-AB')).toBeNull();
    expect(normalisePlate('AB-1234-CD')).toBeNull();
    expect(normalisePlate('1234 AB 99')).toBeNull(); // no department 99
    expect(normalisePlate('hello')).toBeNull();
  });
});
