import { describe, expect, it } from 'vitest';
import { comparableName } from '../src/integrations/kyc/kyc.js';
import { foldAccents } from '../src/lib/text.js';
import { normalise, tokens } from '../src/modules/ai/text-match.js';
import { slugify } from '../src/modules/admin-services/admin-services.schemas.js';

describe('foldAccents', () => {
  it('drops accents and keeps everything else: case, spaces, punctuation, apostrophes, digits', () => {
    expect(foldAccents('Élodie à Besançon, où la Mégane a été réparée')).toBe('Elodie a Besancon, ou la Megane a ete reparee');
    expect(foldAccents('Ça coûte 120 € ? Noël, naïf, Ñandú, Smørrebrød')).toBe('Ca coute 120 € ? Noel, naif, Nandu, Smorrebrod');
    expect(foldAccents("L'Haÿ-les-Roses d’hiver")).toBe("L'Hay-les-Roses d’hiver");
  });

  it('spells out the letters that have no accent to drop, in both cases', () => {
    expect(foldAccents('cœur Œdipe æther Æsop')).toBe('coeur OEdipe aether AEsop');
    expect(foldAccents('Straße STRAẞE')).toBe('Strasse STRASSE');
    expect(foldAccents('Øresund ø Đakovo đ Łódź ł')).toBe('Oresund o Dakovo d Lodz l');
  });

  it('takes marks written apart (e + combining acute) and compatibility forms (ﬁ, ², full-width letters)', () => {
    expect(foldAccents('e\u0301te\u0301')).toBe('ete');
    expect(foldAccents('ﬁltre m² Ｃｌｉｏ')).toBe('filtre m2 Clio');
  });

  it('leaves text without accents unchanged', () => {
    const plain = 'Renault Clio 1.5 dCi (90 ch) - vidange + filtres';
    expect(foldAccents(plain)).toBe(plain);
  });
});

describe('its callers', () => {
  it('slugs: lower case, one hyphen between words', () => {
    expect(slugify('Vidange & Entretien')).toBe('vidange-entretien');
    expect(slugify('Cœur de métier : pare-brise')).toBe('coeur-de-metier-pare-brise');
    expect(slugify('ŒUVRE Æ ß Ø')).toBe('oeuvre-ae-ss-o');
  });

  it('names of identity papers: no case, no accents, punctuation as spaces', () => {
    expect(comparableName("  D'Arc-Dupont ")).toBe('d arc dupont');
    expect(comparableName('Łukasz Øberg')).toBe('lukasz oberg');
  });

  it('problem descriptions: lower case without accents, words of three letters or more', () => {
    expect(normalise('Bruit à l’AVANT, cœur du moteur')).toBe('bruit a l’avant, coeur du moteur');
    expect(tokens('Problème de démarrage à froid')).toEqual(expect.arrayContaining(['probleme', 'demarrage', 'froid']));
  });
});
