import { describe, expect, it } from 'vitest';
import { builtinVehicles, createBuiltinRepairData } from '../src/integrations/repairdata/builtin.js';
import { vinCheckDigit } from '../src/lib/vin.js';

const source = createBuiltinRepairData();

/** A VIN with the given start (WMI + VDS), model-year code at position 10 and a serial. */
function vin(start: string, year: string, serial = '123456'): string {
  const body = `${start.padEnd(8, '0')}0${year}${serial.padStart(7, '0')}`;
  return body.slice(0, 8) + vinCheckDigit(body) + body.slice(9);
}

describe('bundled repair data: the dataset', () => {
  const vehicles = builtinVehicles();

  it('holds a few dozen vehicles of the common European makes, with realistic identities', () => {
    expect(vehicles.length).toBeGreaterThanOrEqual(30);
    const makes = new Set(vehicles.map((v) => v.make));
    for (const make of ['Renault', 'Peugeot', 'Citroën', 'Volkswagen', 'Toyota', 'Dacia', 'Ford', 'Fiat', 'Opel', 'BMW', 'Mercedes-Benz', 'Audi', 'Skoda', 'Tesla']) {
      expect(makes, make).toContain(make);
    }
    for (const v of vehicles) {
      expect(v.id).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
      expect(['city', 'compact', 'family', 'suv', 'premium', 'utility']).toContain(v.category);
      expect(v.yearTo === null || v.yearTo >= v.yearFrom).toBe(true);
      if (v.fuel !== 'electric') expect(v.engineCapacityCc).toBeGreaterThan(600);
    }
    expect(new Set(vehicles.map((v) => v.id)).size).toBe(vehicles.length);
  });

  it('has at least 40 task codes, a profile, intervals and procedures for every system of every vehicle', async () => {
    const codes = new Set<string>();
    for (const v of vehicles) {
      const profile = (await source.vehicle(v.id))!;
      expect(profile.systems.length).toBeGreaterThanOrEqual(8);
      expect(profile.serviceIntervals.some((i) => i.description === 'Brake fluid')).toBe(true);
      for (const task of (await source.searchTasks(v.id, {}))!) codes.add(task.code);
      for (const system of profile.systems) {
        const procedures = (await source.procedures(v.id, system.code))!;
        expect(procedures.length, `${v.id} ${system.code}`).toBeGreaterThan(0);
        for (const p of procedures) {
          expect(p.steps.length).toBeGreaterThan(0);
          expect(p.steps.join(' ')).not.toContain('{oil}');
        }
      }
    }
    expect(codes.size).toBeGreaterThanOrEqual(40);
  });
});

describe('bundled repair data: identification', () => {
  it('identifies by VIN from the manufacturer code, the model year and the model hints', async () => {
    const cases: [string, string][] = [
      [vin('VF1RJA00', 'L'), 'renault-clio-5-tce100'], // Renault, 2020, Clio V
      [vin('VF15RBF0', 'G'), 'renault-clio-4-dci90'], // Renault, 2016, Clio IV
      [vin('VF3CABHY', 'G'), 'peugeot-208-1-bluehdi100'], // PSA engine type BH… at positions 6–8
      [vin('VF3CAHMZ', 'G'), 'peugeot-208-1-puretech82'],
      [vin('VR3UHZKX', 'M'), 'peugeot-e208-136'],
      [vin('WVWZZZAU', 'H'), 'vw-golf-7-tdi110'], // VW model code AU at positions 7–8
      [vin('WVWZZZCD', 'M'), 'vw-golf-8-tsi130'],
      [vin('WVGZZZ5N', 'J'), 'vw-tiguan-2-tdi150'],
      [vin('UU1DJF00', 'M'), 'dacia-sandero-3-tce90'],
      [vin('SB1KZ3BE', 'L'), 'toyota-corolla-12-hybrid122'],
      [vin('W1K17708', 'K'), 'mercedes-classe-a-w177-a180d'],
      [vin('5YJ3E1EA', 'K'), 'tesla-model3-rwd'],
      [vin('ZFA31200', 'D'), 'fiat-500-12-69'],
      [vin('WBA3B510', 'D'), 'bmw-serie3-f30-320d'], // no hint: the only BMW of 2013
    ];
    for (const [code, id] of cases) {
      const found = await source.identify({ vin: code });
      expect(found?.id, code).toBe(id);
    }
    // Position 10 "L" is 2020: the Clio V, never the Clio IV whose production ended in 2019.
    const clio = await source.identify({ vin: vin('VF15RBF0', 'L') });
    expect(clio?.model).toBe('Clio V');
  });

  it('answers the same vehicle for the same VIN, spaces and case aside', async () => {
    const code = vin('WVWZZZAU', 'H');
    const spaced = `${code.slice(0, 3)} ${code.slice(3, 9)} ${code.slice(9)}`.toLowerCase();
    expect(await source.identify({ vin: spaced })).toEqual(await source.identify({ vin: code }));
  });

  it('answers null for an unknown manufacturer, a year without vehicle, or a malformed VIN', async () => {
    expect(await source.identify({ vin: vin('JHMGE880', 'L') })).toBeNull(); // Honda: not in the dataset
    expect(await source.identify({ vin: vin('VF1BA0R0', 'W') })).toBeNull(); // Renault 1998
    expect(await source.identify({ vin: 'VF1RJA00' })).toBeNull();
    expect(await source.identify({ vin: 'VF1RJA000L12345IO' })).toBeNull();
    expect(await source.identify({})).toBeNull();
  });

  it('identifies the demonstration plates, in either spelling, and nothing else', async () => {
    expect((await source.identify({ plate: 'AB-123-CD' }))?.id).toBe('renault-clio-5-tce100');
    expect((await source.identify({ plate: 'ab 123 cd' }))?.id).toBe('renault-clio-5-tce100');
    expect((await source.identify({ plate: '1234 AB 75' }))?.id).toBe('renault-kangoo-2-dci90');
    expect((await source.identify({ plate: 'GH-789-JK' }))?.fuel).toBe('electric');
    expect(await source.identify({ plate: 'ZZ-999-ZZ' })).toBeNull();
  });
});

describe('bundled repair data: tasks, times and procedures', () => {
  it('searches tasks by free text (every word, accents and case ignored) and by system', async () => {
    const brakes = (await source.searchTasks('renault-clio-4-dci90', { q: 'BRAKE pads' }))!;
    expect(brakes.map((t) => t.code)).toEqual(['brake_pads_front', 'brake_discs_front']);
    const filters = (await source.searchTasks('renault-clio-4-dci90', { q: 'fîlter' }))!;
    expect(filters.map((t) => t.code)).toEqual(
      expect.arrayContaining(['oil_filter_change', 'air_filter', 'fuel_filter', 'cabin_filter', 'dpf_clean']),
    );
    const cooling = (await source.searchTasks('vw-golf-7-tsi125', { systemCode: 'cooling' }))!;
    expect(cooling.length).toBeGreaterThan(2);
    expect(cooling.every((t) => t.systemCode === 'cooling')).toBe(true);
    expect(await source.searchTasks('vw-golf-7-tsi125', { q: 'pump', systemCode: 'brakes' })).toEqual([]);
    expect(await source.searchTasks('vw-golf-7-tsi125', { systemCode: 'warp_drive' })).toEqual([]);
    expect(await source.searchTasks('no-such-vehicle', {})).toBeNull();
  });

  it('leaves out the tasks that do not apply: no oil, plugs or timing belt on an electric car', async () => {
    const tesla = 'tesla-model3-rwd';
    for (const code of ['oil_filter_change', 'spark_plugs', 'timing_belt_kit', 'glow_plugs', 'dpf_clean', 'clutch_kit']) {
      expect(await source.repairTime(tesla, code), code).toBeNull();
    }
    expect(await source.repairTime(tesla, 'hv_battery_check')).not.toBeNull();
    const profile = (await source.vehicle(tesla))!;
    const systems = profile.systems.map((s) => s.code);
    expect(systems).not.toContain('engine');
    expect(systems).not.toContain('exhaust');
    expect(systems).toContain('high_voltage');
    expect(profile.serviceIntervals.map((i) => i.description)).not.toContain('Engine oil and filter');

    // A diesel has glow plugs and a particulate filter but no spark plugs; rear drums mean no rear pads.
    const clio = 'renault-clio-4-dci90';
    expect(await source.repairTime(clio, 'glow_plugs')).not.toBeNull();
    expect(await source.repairTime(clio, 'spark_plugs')).toBeNull();
    expect(await source.repairTime(clio, 'brake_pads_rear')).toBeNull();
    expect(await source.repairTime(clio, 'brake_shoes_rear')).not.toBeNull();
    // A full hybrid has no starter motor or alternator, but has both an engine and a high-voltage system.
    expect(await source.repairTime('toyota-yaris-4-hybrid116', 'starter_motor')).toBeNull();
    expect(await source.repairTime('toyota-yaris-4-hybrid116', 'oil_filter_change')).not.toBeNull();
    expect(await source.repairTime('toyota-yaris-4-hybrid116', 'hv_battery_check')).not.toBeNull();
  });

  it('varies labour times by vehicle, with overrides, companion tasks and notes', async () => {
    const city = (await source.repairTime('renault-clio-4-dci90', 'brake_pads_front'))!;
    const premium = (await source.repairTime('bmw-serie3-g20-320d', 'brake_pads_front'))!;
    expect(city.hours).toBe(0.8);
    expect(premium.hours).toBe(1);
    expect(premium.hours).toBeGreaterThan(city.hours);

    const belt = (await source.repairTime('renault-clio-4-dci90', 'timing_belt_kit'))!;
    expect(belt).toMatchObject({ taskCode: 'timing_belt_kit', hours: 2.7, includes: ['water_pump', 'auxiliary_belt'] });
    // The 1.4 TSI's water pump is not on the timing belt.
    expect((await source.repairTime('vw-golf-7-tsi125', 'timing_belt_kit'))!.includes).toEqual(['auxiliary_belt']);
    const wetBelt = (await source.repairTime('peugeot-208-2-puretech100', 'timing_belt_kit'))!;
    expect(wetBelt.hours).toBe(4.6);
    expect(wetBelt.notes).toContain('engine oil');
    const chain = (await source.repairTime('bmw-serie3-g20-320d', 'timing_chain_kit'))!;
    expect(chain.hours).toBe(13);
    expect(chain.notes).toContain('engine is removed');
  });

  it('answers several times at once, each code once, listing the unknown ones', async () => {
    const result = (await source.repairTimes('renault-clio-4-dci90', ['brake_pads_front', 'nope', 'brake_pads_front', 'spark_plugs']))!;
    expect(result.times.map((t) => t.taskCode)).toEqual(['brake_pads_front']);
    expect(result.unknown).toEqual(['nope', 'spark_plugs']);
    expect(await source.repairTimes('no-such-vehicle', ['brake_pads_front'])).toBeNull();
  });

  it("answers procedures with the make's torque values and the vehicle's own warnings", async () => {
    const engine = (await source.procedures('peugeot-208-2-puretech100', 'engine'))!;
    const titles = engine.map((p) => p.title);
    expect(titles).toContain('Timing belt kit replacement');
    expect(titles).not.toContain('Glow plug replacement');
    const oil = engine.find((p) => p.title === 'Engine oil and filter change')!;
    expect(oil.steps.join(' ')).toContain('PSA B71 2312');
    expect(oil.torqueSpecs).toEqual([{ item: 'Oil drain plug', nm: 30 }]);
    expect(oil.warnings.join(' ')).toContain('timing belt runs in the engine oil');

    const brakes = (await source.procedures('vw-golf-7-tdi110', 'brakes'))!;
    const front = brakes.find((p) => p.title === 'Front brake pads and discs replacement')!;
    expect(front.torqueSpecs).toContainEqual({ item: 'Wheel bolts', nm: 120 });
    const rear = brakes.find((p) => p.title === 'Rear brake pads and discs replacement')!;
    expect(rear.warnings.join(' ')).toContain('electric parking brake');
    expect(brakes.map((p) => p.title)).not.toContain('Rear drum brake shoes replacement');

    expect((await source.procedures('tesla-model3-rwd', 'brakes'))![0]!.torqueSpecs).toContainEqual({ item: 'Wheel bolts', nm: 175 });
    expect(await source.procedures('tesla-model3-rwd', 'engine')).toBeNull();
    expect(await source.procedures('tesla-model3-rwd', 'warp_drive')).toBeNull();
    expect(await source.procedures('no-such-vehicle', 'brakes')).toBeNull();
  });

  it('answers copies that callers may change', async () => {
    const time = (await source.repairTime('renault-clio-4-dci90', 'timing_belt_kit'))!;
    time.includes.push('changed');
    time.hours = 99;
    expect(await source.repairTime('renault-clio-4-dci90', 'timing_belt_kit')).toMatchObject({ hours: 2.7, includes: ['water_pump', 'auxiliary_belt'] });
  });
});
