#!/usr/bin/env node
/**
 * Builds data/cities.json, the French communes the marketplace seeds into `cities`.
 *
 * Sources (both installed as devDependencies; the output is committed so the app never needs them):
 * - @etalab/decoupage-administratif, data/communes.json: the official list of communes (INSEE code,
 *   name, department, region, legal population) with their La Poste postal codes.
 *   Data: INSEE Code officiel géographique and La Poste Base officielle des codes postaux, published
 *   under the Etalab Licence Ouverte 2.0 (https://www.etalab.gouv.fr/licence-ouverte-open-licence).
 * - cities.json: GeoNames places with coordinates (name, lat, lng, country, admin2 = department code).
 *   Data: GeoNames (https://www.geonames.org), Creative Commons Attribution 4.0 (CC BY 4.0).
 *
 * Neither has both postal codes and coordinates, so communes are joined to GeoNames places on
 * (normalised name, department). A commune nouvelle that GeoNames still knows under an older name
 * takes the point of its chef-lieu or of another of its communes déléguées; a renamed commune
 * (Saint-Ouen → Saint-Ouen-sur-Seine, Évry → Évry-Courcouronnes) the point of the longest leading
 * part of its name, when that part names no other current commune. Communes of 2 000 inhabitants
 * or more that found coordinates are kept.
 *
 * Output: a JSON array of [insee, name, postal_codes[], department, region, population, lat, lng].
 * Run with `pnpm --filter marketplace-api data:cities`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const MIN_POPULATION = 2000;
const verbose = process.argv.includes('--verbose');
// GeoNames files the overseas departments under their own country codes, with the INSEE
// department code in admin2 where it has one (Mayotte's places carry only their commune code).
const OVERSEAS = { GP: '971', MQ: '972', GF: '973', RE: '974', YT: '976' };
// GeoNames names a few French towns by their English exonym.
const EXONYMS = { '59183': 'Dunkirk' };

const communes = JSON.parse(readFileSync(require.resolve('@etalab/decoupage-administratif/data/communes.json'), 'utf8'));
const places = JSON.parse(readFileSync(require.resolve('cities.json/cities.json'), 'utf8'));

/** "L'Haÿ-les-Roses" and "L Hay les Roses" meet at "l hay les roses". */
function normalise(name) {
  return name
    .normalize('NFD')
    .replace(/\p{Diacritic}/gu, '')
    .toLowerCase()
    .replace(/œ/g, 'oe')
    .replace(/æ/g, 'ae')
    .replace(/\bst\b/g, 'saint')
    .replace(/\bste\b/g, 'sainte')
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();
}

const key = (name, department) => `${department}|${normalise(name)}`;

function departmentOf(place) {
  if (place.country === 'FR') return place.admin2 || undefined;
  return OVERSEAS[place.country];
}

// Three names appear twice in one department (a town and a hamlet of the same name); the first
// listed is kept.
const coordinates = new Map();
let placesSeen = 0;
for (const place of places) {
  const department = departmentOf(place);
  if (!department) continue;
  placesSeen += 1;
  const k = key(place.name, department);
  if (!coordinates.has(k)) coordinates.set(k, [Number(place.lat), Number(place.lng)]);
}

const current = communes
  .filter((c) => c.type === 'commune-actuelle')
  // The most populous commune claims a shared point first.
  .sort((a, b) => (b.population ?? 0) - (a.population ?? 0));
const currentKeys = new Set(current.map((c) => key(c.nom, c.departement)));
const delegated = new Map();
for (const d of communes) {
  if (d.type !== 'commune-deleguee') continue;
  const list = delegated.get(d.chefLieu) ?? [];
  // The commune déléguée that keeps the commune's own code is its chef-lieu: tried first.
  if (d.code === d.chefLieu) list.unshift(d.nom);
  else list.push(d.nom);
  delegated.set(d.chefLieu, list);
}

/** The longest leading parts of a name first ("cherbourg en cotentin" → "cherbourg en", "cherbourg"). */
function leadingParts(name, department) {
  const words = normalise(name).split(' ');
  const keys = [];
  for (let n = words.length - 1; n >= 1; n--) {
    const k = `${department}|${words.slice(0, n).join(' ')}`;
    if (!currentKeys.has(k)) keys.push(k);
  }
  return keys;
}

/** The GeoNames keys a commune may match, best first. */
function candidates(c) {
  const [chefLieu, ...others] = delegated.get(c.code) ?? [];
  const keys = [key(c.nom, c.departement)];
  if (chefLieu) keys.push(key(chefLieu, c.departement));
  keys.push(...leadingParts(c.nom, c.departement));
  if (chefLieu) keys.push(...leadingParts(chefLieu, c.departement));
  for (const name of others) keys.push(key(name, c.departement));
  if (EXONYMS[c.code]) keys.push(key(EXONYMS[c.code], c.departement));
  return keys;
}

const claimed = new Set();
const rows = [];
let bigWithoutCoordinates = 0;
for (const c of current) {
  if ((c.population ?? 0) < MIN_POPULATION) continue;
  const postalCodes = [...new Set(c.codesPostaux ?? [])].sort();
  const match = candidates(c).find((k) => coordinates.has(k) && !claimed.has(k));
  if (!match || postalCodes.length === 0) {
    bigWithoutCoordinates += 1;
    continue;
  }
  claimed.add(match);
  if (verbose && match !== key(c.nom, c.departement)) console.log(`${c.code} ${c.nom} took the point of ${match}`);
  const [lat, lng] = coordinates.get(match);
  rows.push([c.code, c.nom, postalCodes, c.departement, c.region ?? null, c.population, lat, lng]);
}
rows.sort((a, b) => a[0].localeCompare(b[0]));

const out = new URL('../data/cities.json', import.meta.url);
writeFileSync(out, `[\n${rows.map((r) => JSON.stringify(r)).join(',\n')}\n]\n`);

const byInsee = new Map(rows.map((r) => [r[0], r]));
for (const [insee, label] of [
  ['75056', 'Paris'],
  ['69123', 'Lyon'],
  ['13055', 'Marseille'],
]) {
  const row = byInsee.get(insee);
  if (!row) throw new Error(`${label} (${insee}) is missing from the output`);
  console.log(`${label}: ${row[2].length} postal codes, ${row[6]}, ${row[7]}`);
}
console.log(
  `${rows.length} communes written to data/cities.json (GeoNames places read: ${placesSeen}; ` +
    `communes of ${MIN_POPULATION}+ without coordinates: ${bigWithoutCoordinates})`,
);
