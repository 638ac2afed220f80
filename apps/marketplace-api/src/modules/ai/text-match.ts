import { foldAccents } from '../../lib/text.js';

/**
 * Deterministic matching of a free-text problem description against the catalogue and repair
 * tasks: what answers when no model is configured or the model fails.
 */

const STOPWORDS = new Set(
  (
    'les des une un le la du de et en au aux pour par sur dans avec mon ma mes ce cet cette qui que quand est sont ' +
    'fait faire plus pas tres quand depuis elle il ils je j ai a avoir suis the and for with my when from that this ' +
    'have has are was its car voiture vehicule vehicle auto'
  ).split(' '),
);

/** Everyday words for symptoms, mapped to the trade's terms (French and English). */
const SYMPTOMS: [RegExp, string[]][] = [
  [/\b(grince|grincement|couine|squeal|squeak|freine mal|freinage|brake|braking)\w*/, ['frein', 'plaquette', 'disque', 'brake', 'pad']],
  [/\b(crevaison|crev|pneu|flat|tyre|tire|roue|wheel)\w*/, ['pneu', 'tyre', 'roue', 'wheel']],
  [/\b(vidange|huile|oil change|entretien|revision)\w*/, ['vidange', 'huile', 'oil', 'entretien', 'filtre', 'filter']],
  [/\b(demarre|demarrage|start|batterie|battery)\w*/, ['batterie', 'battery', 'demarreur', 'starter', 'alternateur', 'alternator']],
  [/\b(clim|froid|chaud|air condition|ac\b|a\/c)\w*/, ['climatisation', 'clim', 'air', 'conditioning']],
  [/\b(voyant|warning light|engine light|check engine|diagnos)\w*/, ['diagnostic', 'diagnostics', 'voyant']],
  [/\b(embray|clutch|patine)\w*/, ['embrayage', 'clutch']],
  [/\b(courroie|distribution|timing belt|cambelt)\w*/, ['distribution', 'courroie', 'timing', 'belt']],
  [/\b(amorti|suspension|shock|rebond)\w*/, ['amortisseur', 'suspension', 'shock', 'absorber']],
  [/\b(echappement|exhaust|pot|silencieux|fumee|smoke|fap|dpf)\w*/, ['echappement', 'exhaust', 'fap', 'dpf', 'particule']],
  [/\b(rayure|bosse|choc|carrosserie|dent|scratch|body|peinture|paint)\w*/, ['carrosserie', 'body', 'peinture', 'paint']],
  [/\b(pare-brise|parebrise|windscreen|windshield|vitre|glass)\w*/, ['pare', 'brise', 'vitrage', 'windscreen', 'glass']],
  [/\b(phare|ampoule|feu|headlight|bulb|lamp)\w*/, ['phare', 'ampoule', 'eclairage', 'headlamp', 'bulb', 'lamp']],
  [/\b(essuie|wiper)\w*/, ['essuie', 'glace', 'wiper', 'blade']],
  [/\b(controle technique|ct\b|mot\b|inspection)\w*/, ['controle', 'technique', 'inspection']],
  [/\b(parallelisme|tire a gauche|tire a droite|pulls|alignment|geometrie)\w*/, ['parallelisme', 'geometrie', 'alignment']],
  [/\b(surchauffe|overheat|temperature|liquide de refroidissement|coolant|radiateur|radiator)\w*/, ['refroidissement', 'coolant', 'radiateur', 'radiator', 'pompe', 'water', 'pump']],
  [/\b(bougie|spark|plug|prechauffage|glow)\w*/, ['bougie', 'spark', 'plug', 'glow', 'prechauffage']],
];

export function normalise(text: string): string {
  return foldAccents(text).toLowerCase();
}

/** Words of at least three letters, without stopwords, with a crude plural strip. */
export function tokens(text: string): string[] {
  return normalise(text)
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length >= 3 && !STOPWORDS.has(w))
    .map((w) => (w.length > 4 && /[sx]$/.test(w) ? w.slice(0, -1) : w));
}

/** The description's words plus the trade terms its symptoms point to. */
export function expandedTerms(description: string): Set<string> {
  const text = normalise(description);
  const terms = new Set(tokens(description));
  for (const [pattern, words] of SYMPTOMS) if (pattern.test(text)) for (const w of words) terms.add(w);
  return terms;
}

function overlap(terms: Set<string>, words: string[]): number {
  let n = 0;
  for (const w of new Set(words)) {
    if (terms.has(w)) n += 1;
    // A stem match ("plaquette" in "plaquettes", "frein" in "freinage") counts half.
    else if ([...terms].some((t) => t.length >= 5 && (w.startsWith(t) || t.startsWith(w)))) n += 0.5;
  }
  return n;
}

export interface Candidate<T> {
  item: T;
  /** Weighted text fields: the name weighs more than the description. */
  fields: { text: string; weight: number }[];
}

/** The best matches, scored by weighted overlap, with a 0–1 confidence relative to the best. */
export function rank<T>(description: string, candidates: Candidate<T>[], limit: number): { item: T; score: number; confidence: number }[] {
  const terms = expandedTerms(description);
  const scored = candidates
    .map((c) => ({ item: c.item, score: c.fields.reduce((s, f) => s + f.weight * overlap(terms, tokens(f.text)), 0) }))
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score)
    .slice(0, limit);
  const best = scored[0]?.score ?? 1;
  return scored.map((s) => ({ ...s, confidence: Math.round((s.score / Math.max(best, 3)) * 100) / 100 }));
}
