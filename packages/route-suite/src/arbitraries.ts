import fc, { type Arbitrary } from 'fast-check';
import { couldNameARow, encodeUrlText } from './encoding.js';
import { resolveRef, type JsonSchema, type OpenApiDocument, type SuiteOperation, type SuiteParameter } from './openapi.js';

/**
 * Characters that break naive handling: NUL and lone surrogates (which PostgreSQL text refuses),
 * a bidi override, a BOM, line separators, quotes, markup, traversal and SQL/template syntax.
 */
const NASTY_UNITS = [
  '\u0000', '\ud800', '\udfff', '\u202e', '\ufeff', '\u2028', '\u0085', 'é', '\u{1f600}', 'ẞ', '%', '\\', '"', "'", '<', '>',
  '/', '../', '\n', '\r\n', '\t', ' ', '$', '{{', '}}', '*', ';', '--', '\u0007',
];

const nastyUnit: Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...NASTY_UNITS), weight: 1 },
  { arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }), weight: 2 },
);

export function nastyString(minLength = 0, maxLength = 30): Arbitrary<string> {
  return fc.string({ unit: nastyUnit, minLength, maxLength: Math.max(minLength, maxLength) });
}

/** Strings that go beyond any schema: empty, huge, control characters, injection attempts. */
const hostileStrings: Arbitrary<string> = fc.oneof(
  nastyString(0, 40),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x\udc00y',
    'null',
    'undefined',
    'NaN',
    '-1',
    'true',
    '[]',
    '{}',
    '__proto__',
    'constructor',
    "' OR 1=1 --",
    '<script>alert(1)</script>',
    '${7*7}{{7*7}}',
    '../../../../etc/passwd',
    '%00',
    '0000-00-00T00:00:00Z',
    '2026-02-30',
    'a'.repeat(300),
    'é'.repeat(70_000),
  ),
);

/** Numbers as JSON text, beyond what a schema allows: overflow, precision loss, negative zero. */
const hostileNumberText = fc.oneof(
  fc.constantFrom('0', '-0', '-1', '1e3', '1.5', '1e999', '-1e999', '1e-400', '9007199254740993', '2147483648', '-2147483649', '123456789012345678901234567890'),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
);

const deepArray = fc.integer({ min: 50, max: 20_000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`);
const deepObject = fc.integer({ min: 50, max: 5_000 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`);
const anyJson = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v));

/** Bodies shaped to poison an object's prototype if the server merges them carelessly. */
const pollution = fc.constantFrom(
  '{"__proto__":{"isAdmin":true,"role":"admin"}}',
  '{"constructor":{"prototype":{"isAdmin":true}}}',
  '{"__proto__":null}',
  '{"a":{"__proto__":{"polluted":1}}}',
  '[{"__proto__":{"polluted":1}}]',
);

/** A JSON value of a type the schema does not expect, as JSON text. */
const wrongType: Arbitrary<string> = fc.oneof(
  fc.constantFrom('null', 'true', 'false', '0', '-1', '""', '[]', '{}', '"\\u0000"', '"\\ud800"', '[null]', '{"":null}'),
  hostileStrings.map((s) => JSON.stringify(s)),
  hostileNumberText,
  anyJson,
  pollution,
);

/** Whole bodies beyond the operation's schema. */
export const beyondSchema: Arbitrary<string> = fc.oneof(
  wrongType,
  deepArray,
  deepObject,
  fc.integer({ min: 60_000, max: 400_000 }).map((n) => JSON.stringify({ text: 'x'.repeat(n) })),
);

const MAX_DEPTH = 6;
const SAFE = Number.MAX_SAFE_INTEGER;

function clamp(n: number) {
  return Math.max(-SAFE, Math.min(SAFE, n));
}

function numericBounds(schema: JsonSchema, integer: boolean) {
  let min = schema.minimum ?? (typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum : -1_000_000);
  let max = schema.maximum ?? (typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum : 1_000_000);
  const step = integer ? 1 : Number.EPSILON * Math.max(1, Math.abs(min), Math.abs(max));
  if (schema.exclusiveMinimum === true || typeof schema.exclusiveMinimum === 'number') min += step;
  if (schema.exclusiveMaximum === true || typeof schema.exclusiveMaximum === 'number') max -= step;
  min = clamp(integer ? Math.ceil(min) : min);
  max = clamp(integer ? Math.floor(max) : max);
  return max < min ? { min, max: min } : { min, max };
}

function types(schema: JsonSchema): string[] {
  const declared = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (declared.length === 0 && schema.properties) return ['object'];
  if (declared.length === 0 && schema.items) return ['array'];
  return declared;
}

function regex(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern, 'u');
  } catch {
    try {
      return new RegExp(pattern);
    } catch {
      return undefined;
    }
  }
}

/** A string meeting the schema's format or pattern and lengths, NUL and surrogates included where the schema lets them. */
function conformingString(schema: JsonSchema): Arbitrary<string> {
  const dates = fc.date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2200-12-31T00:00:00Z'), noInvalidDate: true });
  switch (schema.format) {
    case 'date-time':
      return dates.map((d) => d.toISOString());
    case 'date':
      return dates.map((d) => d.toISOString().slice(0, 10));
    case 'email':
      return fc.emailAddress();
    case 'uuid':
      return fc.uuid();
    case 'uri':
    case 'url':
      return fc.webUrl();
    default:
      break;
  }
  if (schema.pattern) {
    const re = regex(schema.pattern);
    if (re) {
      try {
        return fc.stringMatching(re, { size: 'small' });
      } catch {
        // A pattern fast-check cannot generate from: nasty strings instead.
      }
    }
  }
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? min + 40, min + 60);
  return nastyString(min, max);
}

type Fragment = Arbitrary<string>;

/**
 * `valid`: values the schema accepts, whose text carries NUL, lone surrogates and the like, so
 * that hostile text reaches the handler and the database. `hostile`: mostly the same, with now
 * and then a wrong type, a missing required property, extra and prototype-polluting keys.
 */
export type Mode = 'valid' | 'hostile';

/** JSON text for a schema; past MAX_DEPTH (a recursive schema), any JSON. */
export function jsonFor(doc: OpenApiDocument, schema: JsonSchema, mode: Mode = 'hostile', depth = 0): Fragment {
  const conforming = conformingJson(doc, schema, mode, depth);
  return mode === 'valid' ? conforming : fc.oneof({ arbitrary: conforming, weight: 6 }, { arbitrary: wrongType, weight: 1 });
}

function conformingJson(doc: OpenApiDocument, schema: JsonSchema, mode: Mode, depth: number): Fragment {
  if (schema.$ref) {
    return depth < MAX_DEPTH ? conformingJson(doc, resolveRef(doc, schema.$ref), mode, depth + 1) : anyJson;
  }
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives?.length) return fc.oneof(...alternatives.map((s) => jsonFor(doc, s, mode, depth + 1)));
  if (schema.allOf?.length) return conformingJson(doc, mergeAllOf(doc, schema.allOf), mode, depth + 1);

  let value: Fragment;
  if (schema.const !== undefined) value = fc.constant(JSON.stringify(schema.const));
  else if (schema.enum?.length) value = fc.constantFrom(...schema.enum.map((v) => JSON.stringify(v)));
  else {
    const kinds = types(schema);
    value = kinds.length === 0 ? anyJson : fc.oneof(...kinds.map((kind) => jsonOfType(doc, schema, kind, mode, depth)));
  }
  return schema.nullable ? fc.oneof({ arbitrary: value, weight: 4 }, { arbitrary: fc.constant('null'), weight: 1 }) : value;
}

function mergeAllOf(doc: OpenApiDocument, parts: JsonSchema[]): JsonSchema {
  const resolved = parts.map((p) => (p.$ref ? resolveRef(doc, p.$ref) : p));
  if (resolved.length === 1) return resolved[0]!;
  return {
    type: 'object',
    properties: Object.assign({}, ...resolved.map((p) => p.properties ?? {})) as Record<string, JsonSchema>,
    required: resolved.flatMap((p) => p.required ?? []),
  };
}

function jsonOfType(doc: OpenApiDocument, schema: JsonSchema, kind: string, mode: Mode, depth: number): Fragment {
  switch (kind) {
    case 'string':
      return conformingString(schema).map((s) => JSON.stringify(s));
    case 'integer': {
      // Mostly near the lower bound: the document's bounds are often wider than the app's rules
      // (a year up to 2^53), and a plausible value gets the rest of the body to the handler.
      const { min, max } = numericBounds(schema, true);
      const near = fc.integer({ min, max: Math.min(max, Math.max(min, 0) + 1000) });
      return fc.oneof({ arbitrary: near, weight: 3 }, { arbitrary: fc.integer({ min, max }), weight: 1 }).map(String);
    }
    case 'number': {
      const { min, max } = numericBounds(schema, false);
      return fc.double({ min, max, noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n));
    }
    case 'boolean':
      return fc.boolean().map(String);
    case 'null':
      return fc.constant('null');
    case 'array': {
      if (depth >= MAX_DEPTH) return fc.constant('[]');
      const items = Array.isArray(schema.items) ? (schema.items[0] ?? {}) : (schema.items ?? {});
      const minLength = schema.minItems ?? 0;
      const maxLength = Math.max(minLength, Math.min(schema.maxItems ?? minLength + 4, minLength + 4));
      return fc.array(jsonFor(doc, items, mode, depth + 1), { minLength, maxLength }).map((xs) => `[${xs.join(',')}]`);
    }
    case 'object':
      return objectJson(doc, schema, mode, depth);
    default:
      return anyJson;
  }
}

const EXTRA_KEYS = fc.oneof(fc.constantFrom('__proto__', 'constructor', 'prototype', 'extra', '', 'id', 'role', 'is_admin'), nastyString(1, 12));

function objectJson(doc: OpenApiDocument, schema: JsonSchema, mode: Mode, depth: number): Fragment {
  if (depth >= MAX_DEPTH) return fc.constant('{}');
  const required = new Set(schema.required ?? []);
  const entries = Object.entries(schema.properties ?? {}).map(([key, propertySchema]) => {
    const present = jsonFor(doc, propertySchema, mode, depth + 1).map((v) => `${JSON.stringify(key)}:${v}`);
    // Hostile: required properties are left out now and then. Optional ones about half the time.
    if (required.has(key)) {
      return mode === 'valid' ? present : fc.oneof({ arbitrary: present, weight: 12 }, { arbitrary: fc.constant(undefined), weight: 1 });
    }
    return fc.option(present, { freq: 2 });
  });
  const additional = schema.additionalProperties;
  const open = additional !== undefined && additional !== false;
  // A record's own keys (`context`), or in hostile mode keys no schema names.
  if (mode === 'valid' && !open) return fc.tuple(...entries).map((own) => `{${own.filter((e): e is string => typeof e === 'string').join(',')}}`);
  const extraValue = additional && typeof additional === 'object' ? jsonFor(doc, additional, mode, depth + 1) : mode === 'valid' ? anyJson : wrongType;
  const extras = fc.array(
    fc.tuple(mode === 'valid' ? nastyString(1, 12) : EXTRA_KEYS, extraValue).map(([key, value]) => `${JSON.stringify(key)}:${value}`),
    { maxLength: open ? 4 : 2 },
  );
  return fc
    .tuple(fc.tuple(...entries), fc.oneof({ arbitrary: fc.constant([] as string[]), weight: 3 }, { arbitrary: extras, weight: 1 }))
    .map(([own, more]) => `{${[...own.filter((e): e is string => typeof e === 'string' && e !== ''), ...more].join(',')}}`);
}

/** A request body for the operation, as JSON text, within its schema and beyond it. */
export function bodyFor(doc: OpenApiDocument, op: SuiteOperation, mode: Mode = 'hostile'): Arbitrary<string | undefined> {
  if (op.body?.schema) {
    if (mode === 'valid') return jsonFor(doc, op.body.schema, 'valid');
    return fc.oneof({ arbitrary: jsonFor(doc, op.body.schema), weight: 8 }, { arbitrary: beyondSchema, weight: 1 }, { arbitrary: fc.constant(undefined), weight: 1 });
  }
  if (op.method === 'GET' || op.method === 'HEAD') return fc.constant(undefined);
  return fc.option(beyondSchema, { freq: 2, nil: undefined });
}

/** Path values: numbers out of every range, traversal and bad encodings, long and unicode text. Raw URL text. */
function hostileSegment(stateChanging: boolean): Arbitrary<string> {
  const raw = fc.oneof(
    fc.constantFrom(
      '0', '-1', '-0', '1e3', '1.5', '0x10', '+0', 'NaN', 'Infinity', '-Infinity', '2147483648', '-2147483649', '9007199254740993',
      '99999999999999999999999999', '1e309', '0.0000001', '%200', '%00', '1%00', '..%2f', '..%2F..%2F..%2Fetc%2Fpasswd', '%2e%2e', '%2e',
      '%ED%A0%80', '%C0%AF', '%FF', '%zz', '%', '%25', '%20', 'null', 'undefined', '__proto__', 'constructor', '%7B%7D', '%3Cscript%3E',
      'a'.repeat(200), '%C3%A9'.repeat(60),
    ),
    fc.integer({ min: -(2 ** 31), max: 0 }).map(String),
    fc.bigInt({ min: 2n ** 31n, max: 10n ** 40n }).map(String),
    nastyString(1, 30).map(encodeUrlText),
  );
  return stateChanging ? raw.filter((value) => !couldNameARow(value)) : raw;
}

/** A query-string value (not JSON): conforming to the parameter's schema or hostile. */
function queryValue(schema: JsonSchema, mode: Mode): Arbitrary<string> {
  const kinds = types(schema);
  const conforming: Arbitrary<string>[] = [];
  if (schema.enum?.length) conforming.push(fc.constantFrom(...schema.enum.map(String)));
  if (kinds.includes('integer') || kinds.includes('number')) {
    const integer = kinds.includes('integer');
    const { min, max } = numericBounds(schema, integer);
    const low = Math.max(Math.ceil(min), -(2 ** 31));
    const high = Math.max(low, Math.min(Math.floor(max), 2 ** 31 - 1));
    conforming.push(integer ? fc.integer({ min: low, max: high }).map(String) : fc.double({ min, max, noNaN: true, noDefaultInfinity: true }).map(String));
  }
  if (kinds.includes('boolean')) conforming.push(fc.constantFrom('true', 'false'));
  if (kinds.includes('string') && !schema.enum) conforming.push(conformingString(schema));
  if (conforming.length === 0) conforming.push(nastyString(0, 20));
  if (mode === 'valid') return fc.oneof(...conforming);
  return fc.oneof(
    { arbitrary: fc.oneof(...conforming), weight: 3 },
    { arbitrary: hostileStrings, weight: 1 },
    { arbitrary: hostileNumberText, weight: 1 },
  );
}

/** A query string: documented parameters present or not, conforming or hostile, repeated, with extra keys and raw bad encodings. */
function queryFor(op: SuiteOperation, mode: Mode): Arbitrary<string> {
  const documented = op.queryParams.map((p: SuiteParameter) =>
    fc.option(
      queryValue(p.schema, mode).map((value) => `${encodeUrlText(p.name)}=${encodeUrlText(value)}`),
      { freq: 2 },
    ),
  );
  const keys = fc.oneof(
    fc.constantFrom('__proto__', 'constructor', 'a[b]', 'page[]', '', ...op.queryParams.map((p) => p.name)),
    nastyString(1, 10),
  );
  const extra = fc.oneof(
    fc.tuple(keys, hostileStrings).map(([k, v]) => `${encodeUrlText(k)}=${encodeUrlText(v)}`),
    fc.constantFrom('%00=%00', 'a=%ED%A0%80', 'a=%zz', '%zz=1', '&&&', '=', 'a', `q=${'x'.repeat(5000)}`),
  );
  if (mode === 'valid') return fc.tuple(...documented).map((own) => own.filter((x): x is string => typeof x === 'string').join('&'));
  return fc
    .tuple(fc.tuple(...documented), fc.oneof({ arbitrary: fc.constant([] as string[]), weight: 2 }, { arbitrary: fc.array(extra, { maxLength: 3 }), weight: 1 }))
    .map(([own, more]) => [...own.filter((x): x is string => typeof x === 'string'), ...more].join('&'));
}

export interface HostileParts {
  /** Raw URL text per path parameter. */
  params: Record<string, string>;
  query: string;
  body?: string;
}

/**
 * One hostile request's parts for an operation. A path parameter is now and then the fixture value
 * the app made for the operation (so bodies reach the handler), otherwise hostile; requests that
 * change state never carry a value that could name an existing row.
 */
export function hostileRequest(doc: OpenApiDocument, op: SuiteOperation, fixtures: Record<string, string> = {}): Arbitrary<HostileParts> {
  const stateChanging = op.method !== 'GET' && op.method !== 'HEAD';
  const params = (mode: Mode) => {
    const out: Record<string, Arbitrary<string>> = {};
    for (const p of op.pathParams) {
      const fixture = fixtures[p.name];
      const hostile = hostileSegment(stateChanging);
      out[p.name] =
        fixture === undefined
          ? hostile
          : fc.oneof(
              { arbitrary: fc.constant(encodeUrlText(fixture)), weight: mode === 'valid' ? 4 : 1 },
              { arbitrary: hostile, weight: mode === 'valid' ? 1 : 4 },
            );
    }
    return fc.record(out);
  };
  // Half the requests are valid but for their text, mostly naming the fixtures, so the text reaches
  // the handler and the database; half go beyond the schemas.
  const parts = (mode: Mode) => fc.record({ params: params(mode), query: queryFor(op, mode), body: bodyFor(doc, op, mode) });
  return fc.oneof(parts('valid'), parts('hostile'));
}
