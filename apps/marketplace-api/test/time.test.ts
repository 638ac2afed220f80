import { ConfigError } from '@repo/config';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { addDays, createClock, isCalendarDate, isTimeZone, startOfDayIn, todayIn } from '../src/lib/time.js';

const PARIS = 'Europe/Paris';
const at = (iso: string) => new Date(iso);
const hours = (from: Date, to: Date) => (to.getTime() - from.getTime()) / 3_600_000;

describe('todayIn', () => {
  it('answers the day in the zone, not in UTC', () => {
    // 23:30 UTC on 14 June is already 01:30 on the 15th in Paris (UTC+2), and still the 14th in New York.
    expect(todayIn(PARIS, at('2026-06-14T23:30:00Z'))).toBe('2026-06-15');
    expect(todayIn('UTC', at('2026-06-14T23:30:00Z'))).toBe('2026-06-14');
    expect(todayIn('America/New_York', at('2026-06-15T01:30:00Z'))).toBe('2026-06-14');
  });

  it('turns the day at Paris midnight on either side of the March change (UTC+1 → UTC+2, 29 March 2026)', () => {
    expect(todayIn(PARIS, at('2026-03-28T22:59:59Z'))).toBe('2026-03-28');
    expect(todayIn(PARIS, at('2026-03-28T23:00:00Z'))).toBe('2026-03-29');
    // 02:00 local does not exist that night: 00:59 UTC is 01:59 winter time, 01:00 UTC is 03:00 summer time.
    expect(todayIn(PARIS, at('2026-03-29T00:59:59Z'))).toBe('2026-03-29');
    expect(todayIn(PARIS, at('2026-03-29T01:00:00Z'))).toBe('2026-03-29');
    // The next midnight comes an hour earlier in UTC.
    expect(todayIn(PARIS, at('2026-03-29T21:59:59Z'))).toBe('2026-03-29');
    expect(todayIn(PARIS, at('2026-03-29T22:00:00Z'))).toBe('2026-03-30');
  });

  it('turns the day at Paris midnight on either side of the October change (UTC+2 → UTC+1, 25 October 2026)', () => {
    expect(todayIn(PARIS, at('2026-10-24T21:59:59Z'))).toBe('2026-10-24');
    expect(todayIn(PARIS, at('2026-10-24T22:00:00Z'))).toBe('2026-10-25');
    // 02:30 local happens twice that night (00:30 and 01:30 UTC): the same day both times.
    expect(todayIn(PARIS, at('2026-10-25T00:30:00Z'))).toBe('2026-10-25');
    expect(todayIn(PARIS, at('2026-10-25T01:30:00Z'))).toBe('2026-10-25');
    expect(todayIn(PARIS, at('2026-10-25T22:59:59Z'))).toBe('2026-10-25');
    expect(todayIn(PARIS, at('2026-10-25T23:00:00Z'))).toBe('2026-10-26');
  });
});

describe('startOfDayIn', () => {
  it('gives the instant of local midnight, whatever the offset that day', () => {
    expect(startOfDayIn(PARIS, '2026-01-15').toISOString()).toBe('2026-01-14T23:00:00.000Z');
    expect(startOfDayIn(PARIS, '2026-07-15').toISOString()).toBe('2026-07-14T22:00:00.000Z');
  });

  it('makes the March change day 23 hours long', () => {
    const day = startOfDayIn(PARIS, '2026-03-29');
    const next = startOfDayIn(PARIS, '2026-03-30');
    expect(day.toISOString()).toBe('2026-03-28T23:00:00.000Z');
    expect(next.toISOString()).toBe('2026-03-29T22:00:00.000Z');
    expect(hours(day, next)).toBe(23);
  });

  it('makes the October change day 25 hours long', () => {
    const day = startOfDayIn(PARIS, '2026-10-25');
    const next = startOfDayIn(PARIS, '2026-10-26');
    expect(day.toISOString()).toBe('2026-10-24T22:00:00.000Z');
    expect(next.toISOString()).toBe('2026-10-25T23:00:00.000Z');
    expect(hours(day, next)).toBe(25);
  });

  it('begins a day at 01:00 where daylight saving skips midnight', () => {
    // Chile moves from UTC-4 to UTC-3 at 00:00 on the first Sunday of September: 00:00–00:59 never happens.
    expect(startOfDayIn('America/Santiago', '2026-09-06').toISOString()).toBe('2026-09-06T04:00:00.000Z');
    expect(todayIn('America/Santiago', startOfDayIn('America/Santiago', '2026-09-06'))).toBe('2026-09-06');
  });
});

describe('calendar days', () => {
  it('adds days across month, year and DST boundaries without drifting', () => {
    expect(addDays('2026-03-28', 1)).toBe('2026-03-29');
    expect(addDays('2026-03-28', 2)).toBe('2026-03-30');
    expect(addDays('2026-10-24', 2)).toBe('2026-10-26');
    expect(addDays('2026-12-31', 1)).toBe('2027-01-01');
    expect(addDays('2028-03-01', -1)).toBe('2028-02-29');
    expect(addDays('2026-01-10', -40)).toBe('2025-12-01');
  });

  it('accepts only real days written YYYY-MM-DD', () => {
    expect(isCalendarDate('2028-02-29')).toBe(true);
    for (const bad of ['2026-02-29', '2026-02-31', '2026-13-01', '2026-1-5', '15/04/1990', '2026-01-01T00:00:00Z', '']) {
      expect(isCalendarDate(bad), bad).toBe(false);
    }
  });

  it('knows zone names, not offsets or unknown names', () => {
    for (const zone of ['Europe/Paris', 'America/Argentina/Buenos_Aires', 'UTC', 'Etc/GMT+1']) expect(isTimeZone(zone), zone).toBe(true);
    for (const zone of ['+01:00', 'Europe/Pariss', 'Mars/Olympus_Mons', '', 'Europe/Paris; drop']) expect(isTimeZone(zone), zone).toBe(false);
  });
});

describe('the platform clock', () => {
  it("answers today's date in the configured zone", () => {
    const clock = createClock(PARIS, () => at('2026-03-28T23:30:00Z'));
    expect(clock.zone).toBe(PARIS);
    expect(clock.today()).toBe('2026-03-29');
    expect(createClock('UTC', () => at('2026-03-28T23:30:00Z')).today()).toBe('2026-03-28');
  });

  it('comes from PLATFORM_TIME_ZONE, Europe/Paris by default, and refuses an unknown zone at start-up', () => {
    const base = { NODE_ENV: 'test', DATA_DIR: 'memory://' };
    expect(loadConfig(base).platformTimeZone).toBe('Europe/Paris');
    expect(loadConfig({ ...base, PLATFORM_TIME_ZONE: 'America/Montreal' }).platformTimeZone).toBe('America/Montreal');
    expect(() => loadConfig({ ...base, PLATFORM_TIME_ZONE: 'Europe/Atlantis' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, PLATFORM_TIME_ZONE: '+01:00' })).toThrow(/PLATFORM_TIME_ZONE/);
  });
});
