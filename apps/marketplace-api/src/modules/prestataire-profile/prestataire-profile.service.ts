import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { PrestataireProfile } from '../../db/schema/index.js';
import type { Actor } from '../../lib/context.js';
import { type ActivityRecorder, userSubject } from '../activity-log/index.js';
import { userRecords } from '../user-store/index.js';
import * as repo from './prestataire-profile.repository.js';
import type { UpdateProfileBody } from './prestataire-profile.schemas.js';

type Editable = Pick<
  PrestataireProfile,
  | 'businessName'
  | 'description'
  | 'address'
  | 'postalCode'
  | 'city'
  | 'cityId'
  | 'latitude'
  | 'longitude'
  | 'serviceRadiusKm'
  | 'timezone'
  | 'hourlyRateCents'
  | 'publicPhone'
  | 'website'
>;

/** Body field → column, in the order the activity log lists them. */
const FIELDS: readonly (readonly [keyof UpdateProfileBody, keyof Editable])[] = [
  ['business_name', 'businessName'],
  ['description', 'description'],
  ['address', 'address'],
  ['postal_code', 'postalCode'],
  ['city', 'city'],
  ['city_id', 'cityId'],
  ['latitude', 'latitude'],
  ['longitude', 'longitude'],
  ['service_radius_km', 'serviceRadiusKm'],
  ['timezone', 'timezone'],
  ['hourly_rate_cents', 'hourlyRateCents'],
  ['public_phone', 'publicPhone'],
  ['website', 'website'],
];

export function createPrestataireProfileService(deps: { db: DbTx; recorder: ActivityRecorder }) {
  const { db } = deps;

  /** What the body asks for, with the chosen city filling the location fields the body leaves out. */
  async function requested(tx: DbTx, current: PrestataireProfile, body: UpdateProfileBody): Promise<Partial<Editable>> {
    const wanted: Partial<Editable> = {};
    for (const [field, column] of FIELDS) {
      const value = body[field];
      if (value !== undefined) Object.assign(wanted, { [column]: value });
    }
    if (body.city_id !== undefined && body.city_id !== null) {
      const city = await repo.findCity(tx, body.city_id);
      if (!city) throw AppError.validation({ city_id: ['No city has this id'] });
      wanted.city ??= city.name;
      // A commune may have several postal codes; the current one stays when it belongs to the commune.
      const sameCommune = city.postalCodes.includes(current.postalCode);
      wanted.postalCode ??= sameCommune ? current.postalCode : (city.postalCodes[0] ?? current.postalCode);
      if (wanted.latitude === undefined) {
        wanted.latitude = city.latitude;
        wanted.longitude = city.longitude;
      }
    }
    return wanted;
  }

  return {
    /** Changes the signed-in prestataire's business profile; the activity log keeps what changed. */
    async update(actor: Actor, body: UpdateProfileBody) {
      const userId = actor.userId;
      return withTransaction(db, async (tx) => {
        const current = await repo.lockProfile(tx, userId);
        const user = await userRecords.findUserById(tx, userId);
        if (!current || !user || user.deletedAt) throw AppError.notFound('Prestataire profile');

        const wanted = await requested(tx, current, body);
        const set: Partial<Editable> = {};
        const before: Record<string, unknown> = {};
        const after: Record<string, unknown> = {};
        for (const [field, column] of FIELDS) {
          const value = wanted[column];
          if (value === undefined || value === current[column]) continue;
          Object.assign(set, { [column]: value });
          before[field] = current[column];
          after[field] = value;
        }
        if (Object.keys(set).length === 0) return { user, profile: current };

        const profile = await repo.updateProfile(tx, userId, set);
        if (!profile) throw AppError.notFound('Prestataire profile');
        await deps.recorder.record(actor, 'prestataire.profile_updated', userSubject(userId), { before, after }, tx);
        return { user, profile };
      });
    },
  };
}

export type PrestataireProfileService = ReturnType<typeof createPrestataireProfileService>;
