import { DateTime, Settings } from 'luxon';
import { describe, expect, it } from 'vitest';
import { localDateOf, subtract, union, upcomingSlots, type Schedule } from '../src/modules/booking/slots/slot-grid.js';

const allDay = [1, 2, 3, 4, 5, 6, 7].map((d) => ({ dayOfWeek: d, startTime: '00:00:00', endTime: '24:00:00' }));
const longAgo = new Date('2000-01-01T00:00:00Z');

function schedule(timezone: string, over: Partial<Schedule> = {}): Schedule {
  return { timezone, weekly: allDay, closures: [], absences: [], busy: [], ...over };
}

function starts(s: Schedule, from: string, days = 1, durationMinutes = 60, now = longAgo) {
  return upcomingSlots(s, { from, days, durationMinutes, now }).map((d) => ({ date: d.date, starts: d.slots.map((x) => x.startsAt.toISOString()) }));
}

const local = (iso: string, zone: string) => DateTime.fromISO(iso, { zone: 'utc' }).setZone(zone).toFormat('HH:mm');

describe('free slots across daylight-saving changes', () => {
  it('Europe/Paris, last Sunday of March: a 23-hour day, no slot in the skipped hour', () => {
    const [day] = starts(schedule('Europe/Paris'), '2026-03-29');
    expect(day?.date).toBe('2026-03-29');
    expect(day?.starts).toHaveLength((23 * 60 - 60) / 30 + 1);
    expect(day?.starts[0]).toBe('2026-03-28T23:00:00.000Z');
    expect(day?.starts.at(-1)).toBe('2026-03-29T21:00:00.000Z'); // 23:00 CEST, ending at midnight
    const times = day?.starts.map((s) => local(s, 'Europe/Paris')) ?? [];
    expect(times).toContain('01:30');
    expect(times).not.toContain('02:00');
    expect(times).not.toContain('02:30');
    expect(times).toContain('03:00');
  });

  it('Europe/Paris, last Sunday of October: a 25-hour day, the repeated hour offered twice', () => {
    const [day] = starts(schedule('Europe/Paris'), '2026-10-25');
    expect(day?.starts).toHaveLength((25 * 60 - 60) / 30 + 1);
    expect(day?.starts[0]).toBe('2026-10-24T22:00:00.000Z');
    const twoOClock = day?.starts.filter((s) => local(s, 'Europe/Paris') === '02:00');
    expect(twoOClock).toEqual(['2026-10-25T00:00:00.000Z', '2026-10-25T01:00:00.000Z']);
  });

  it('weekly hours stay wall-clock hours: 08:00 is 07:00 UTC before the March change and 06:00 UTC after', () => {
    const s = schedule('Europe/Paris', { weekly: [{ dayOfWeek: 1, startTime: '08:00:00', endTime: '10:00:00' }] });
    const days = starts(s, '2026-03-23', 8);
    expect(days[0]?.starts).toEqual(['2026-03-23T07:00:00.000Z', '2026-03-23T07:30:00.000Z', '2026-03-23T08:00:00.000Z']);
    expect(days[7]?.date).toBe('2026-03-30');
    expect(days[7]?.starts).toEqual(['2026-03-30T06:00:00.000Z', '2026-03-30T06:30:00.000Z', '2026-03-30T07:00:00.000Z']);
    expect(days.slice(1, 7).every((d) => d.starts.length === 0)).toBe(true);
  });

  it('Australia/Sydney, in the other hemisphere: clocks go back in April and forward in October', () => {
    const hours = schedule('Australia/Sydney', {
      weekly: [5, 1].map((d) => ({ dayOfWeek: d, startTime: '09:00:00', endTime: '10:00:00' })),
    });
    const april = starts(hours, '2026-04-03', 4);
    expect(april[0]?.starts).toEqual(['2026-04-02T22:00:00.000Z']); // Friday, AEDT (+11)
    expect(april[3]?.starts).toEqual(['2026-04-05T23:00:00.000Z']); // Monday, AEST (+10)
    const [back] = starts(schedule('Australia/Sydney'), '2026-04-05');
    expect(back?.starts).toHaveLength((25 * 60 - 60) / 30 + 1);
    const [forward] = starts(schedule('Australia/Sydney'), '2026-10-04');
    expect(forward?.starts).toHaveLength((23 * 60 - 60) / 30 + 1);
    expect(forward?.starts.map((s) => local(s, 'Australia/Sydney'))).not.toContain('02:30');
  });

  const sunday = (startTime: string, endTime: string) => [{ dayOfWeek: 7, startTime, endTime }];

  it('a weekly time a fall-back change repeats is its first occurrence, east and west of UTC', () => {
    // Paris, 25 October 2026: 02:00–03:00 happens twice (summer time, then winter time).
    const [paris] = starts(schedule('Europe/Paris', { weekly: sunday('02:00:00', '04:00:00') }), '2026-10-25');
    expect(paris?.starts).toEqual(['2026-10-25T00:00:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-25T01:00:00.000Z', '2026-10-25T01:30:00.000Z', '2026-10-25T02:00:00.000Z']);
    // New York, 1 November 2026: 01:00–02:00 happens twice.
    const [newYork] = starts(schedule('America/New_York', { weekly: sunday('01:00:00', '03:00:00') }), '2026-11-01');
    expect(newYork?.starts[0]).toBe('2026-11-01T05:00:00.000Z');
    expect(newYork?.starts).toHaveLength(5);
    // Sydney, 5 April 2026: 02:00–03:00 happens twice.
    const [sydney] = starts(schedule('Australia/Sydney', { weekly: sunday('02:00:00', '04:00:00') }), '2026-04-05');
    expect(sydney?.starts[0]).toBe('2026-04-04T15:00:00.000Z');
    expect(sydney?.starts).toHaveLength(5);
  });

  it('a weekly time a spring-forward change skips moves on by the gap', () => {
    // Paris, 29 March 2026: 02:30 does not exist; the hours start at 03:30 summer time.
    const [day] = starts(schedule('Europe/Paris', { weekly: sunday('02:30:00', '05:00:00') }), '2026-03-29');
    expect(day?.starts).toEqual(['2026-03-29T01:30:00.000Z', '2026-03-29T02:00:00.000Z']);
  });

  it('a day starts at its first midnight where a change repeats midnight, and after the gap where one skips it', () => {
    // Havana, 1 November 2026: 01:00 summer time becomes 00:00 winter time, a 25-hour day from its first midnight.
    const [havana] = starts(schedule('America/Havana'), '2026-11-01');
    expect(havana?.starts[0]).toBe('2026-11-01T04:00:00.000Z');
    expect(havana?.starts).toHaveLength((25 * 60 - 60) / 30 + 1);
    // Santiago, 6 September 2026: midnight is skipped, a 23-hour day from 01:00.
    const [santiago] = starts(schedule('America/Santiago'), '2026-09-06');
    expect(santiago?.starts[0]).toBe('2026-09-06T04:00:00.000Z');
    expect(santiago?.starts).toHaveLength((23 * 60 - 60) / 30 + 1);
  });

  it('answers the same whatever the season the code runs in (Luxon alone resolves a repeated time by the offset of now)', () => {
    const paris = schedule('Europe/Paris', { weekly: sunday('02:00:00', '04:00:00') });
    const havana = schedule('America/Havana');
    try {
      // Dates no other test asks about, so each is worked out under its own clock.
      Settings.now = () => Date.parse('2026-01-15T12:00:00Z');
      const [parisInWinter] = starts(paris, '2027-10-31');
      const [havanaInWinter] = starts(havana, '2027-11-07');
      Settings.now = () => Date.parse('2026-07-15T12:00:00Z');
      const [parisInSummer] = starts(paris, '2028-10-29');
      const [havanaInSummer] = starts(havana, '2028-11-05');
      expect(parisInWinter?.starts[0]).toBe('2027-10-31T00:00:00.000Z');
      expect(parisInSummer?.starts[0]).toBe('2028-10-29T00:00:00.000Z');
      expect(havanaInWinter?.starts[0]).toBe('2027-11-07T04:00:00.000Z');
      expect(havanaInSummer?.starts[0]).toBe('2028-11-05T04:00:00.000Z');
      for (const day of [havanaInWinter, havanaInSummer]) expect(day?.starts).toHaveLength((25 * 60 - 60) / 30 + 1);
    } finally {
      Settings.now = () => Date.now();
    }
  });

  it('tells the local date of an instant, on both sides of midnight and of a change', () => {
    const on = (iso: string, zone: string) => localDateOf(new Date(iso), zone);
    expect(on('2026-03-28T22:59:59Z', 'Europe/Paris')).toBe('2026-03-28');
    expect(on('2026-03-28T23:00:00Z', 'Europe/Paris')).toBe('2026-03-29');
    expect(on('2026-03-29T21:59:59Z', 'Europe/Paris')).toBe('2026-03-29');
    expect(on('2026-03-29T22:00:00Z', 'Europe/Paris')).toBe('2026-03-30');
    expect(on('2026-11-01T03:59:59Z', 'America/Havana')).toBe('2026-10-31');
    expect(on('2026-11-01T05:30:00Z', 'America/Havana')).toBe('2026-11-01');
    expect(on('2026-06-01T11:59:59Z', 'Pacific/Kiritimati')).toBe('2026-06-02');
  });

  it('keeps the local half-hour grid in a zone offset by 45 minutes, and from an interval starting off the grid', () => {
    const s = schedule('Asia/Kathmandu', { weekly: [{ dayOfWeek: 3, startTime: '08:10:00', endTime: '10:00:00' }] });
    const [day] = starts(s, '2026-06-03', 1, 30);
    expect(day?.starts.map((x) => local(x, 'Asia/Kathmandu'))).toEqual(['08:30', '09:00', '09:30']);
  });
});

describe('free time', () => {
  const monday = '2026-06-01';
  const paris = (time: string) => DateTime.fromISO(`${monday}T${time}`, { zone: 'Europe/Paris' }).toJSDate();
  const hours = [{ dayOfWeek: 1, startTime: '08:00:00', endTime: '12:00:00' }, { dayOfWeek: 1, startTime: '14:00:00', endTime: '18:00:00' }];

  it('subtracts absences and active appointments, and a slot fits wholly in what is left', () => {
    const s = schedule('Europe/Paris', {
      weekly: hours,
      absences: [{ startsAt: paris('09:00'), endsAt: paris('10:15') }],
      busy: [{ startsAt: paris('15:00'), endsAt: paris('16:00') }],
    });
    const [day] = starts(s, monday, 1, 60);
    expect(day?.starts.map((x) => local(x, 'Europe/Paris'))).toEqual(['08:00', '10:30', '11:00', '14:00', '16:00', '16:30', '17:00']);
  });

  it('a closure removes whole local days, both ends included', () => {
    const s = schedule('Europe/Paris', { closures: [{ startDate: '2026-06-02', endDate: '2026-06-03' }] });
    const days = starts(s, monday, 4, 60);
    expect(days.map((d) => d.starts.length)).toEqual([47, 0, 0, 47]);
  });

  it('offers nothing within the hour from now, and nothing longer than the free time', () => {
    const s = schedule('Europe/Paris', { weekly: hours });
    const [soon] = starts(s, monday, 1, 60, paris('08:40'));
    expect(soon?.starts.map((x) => local(x, 'Europe/Paris'))[0]).toBe('10:00');
    const [tooLong] = starts(s, monday, 1, 300);
    expect(tooLong?.starts).toEqual([]);
  });

  it('joins hours that meet at midnight, so a slot may run across it', () => {
    const s = schedule('Europe/Paris', {
      weekly: [{ dayOfWeek: 1, startTime: '22:00:00', endTime: '24:00:00' }, { dayOfWeek: 2, startTime: '00:00:00', endTime: '02:00:00' }],
    });
    const days = starts(s, monday, 2, 180);
    expect(days[0]?.starts.map((x) => local(x, 'Europe/Paris'))).toEqual(['22:00', '22:30', '23:00']);
  });

  it('interval arithmetic: union merges touching intervals; subtract cuts holes', () => {
    expect(union([{ start: 5, end: 7 }, { start: 1, end: 3 }, { start: 3, end: 4 }])).toEqual([{ start: 1, end: 4 }, { start: 5, end: 7 }]);
    expect(subtract([{ start: 0, end: 10 }], [{ start: 2, end: 3 }, { start: 8, end: 12 }])).toEqual([{ start: 0, end: 2 }, { start: 3, end: 8 }]);
  });
});
