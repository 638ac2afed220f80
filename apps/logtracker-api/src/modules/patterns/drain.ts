/**
 * Online log template miner after Drain (He et al., "Drain: An Online Log Parsing Approach with
 * Fixed Depth Tree", ICWS 2017), written for this project. Pure and synchronous: no I/O, and the
 * whole state is plain data (toJSON/fromJSON) so a project's miner can be stored and resumed.
 *
 * Beyond the paper: variables are masked before the tree, templates keep the constant part of a
 * token (`uid=<*>`), differing plain words only become `<*>` once several have been seen, and
 * clusters that turn out to differ only at variable positions are merged. A line of another length
 * joins a template when the two align on their constant tokens and every stretch between them is a
 * variable part (a size with or without its unit, a list, free text after a colon): that stretch
 * becomes one `<*>` spanning any number of tokens.
 */

export const WILDCARD = '<*>';

export interface MaskRule {
  name: string;
  /** Regular expression source; each match becomes one `<*>`. Text, so options survive JSON. */
  pattern: string;
}

export interface DrainOptions {
  /**
   * Share of a line's positions that must agree with a template (a `<*>` agrees with anything);
   * a single differing position always qualifies, or short lines could never vary.
   */
  similarityThreshold: number;
  /** Tree depth counting the root and the token-count level: 4 routes on the first 2 tokens. */
  depth: number;
  /** Children per tree node; further distinct tokens share the node's wildcard child. */
  maxChildren: number;
  /** Clusters kept per leaf; beyond it the least recently matched leaves the tree (still listed). */
  maxClustersPerLeaf: number;
  /** Tried in this order at each position of the raw message; a match becomes `<*>`. */
  maskRules: readonly MaskRule[];
  /** Masks identifier-like pieces of tokens (`rdd_42_7`, `job_1445144423722_0020`). */
  maskIdTokens: boolean;
  /**
   * Distinct plain words a position must show before it becomes `<*>`; until then each word keeps
   * its own cluster. 1 generalises at the first difference, as the original Drain does.
   */
  minWordVariants: number;
  /** Merges clusters of one leaf whose templates differ only at variable positions. */
  mergeClusters: boolean;
}

const HEX = '[0-9a-fA-F]';
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*';
const WEEKDAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*';

export const DEFAULT_MASK_RULES: readonly MaskRule[] = [
  // Sentence punctuation right after a URL or path belongs to the prose, not to the value. The
  // scheme is bounded: unbounded, every word boundary of a long dotted run rescans to its end.
  { name: 'url', pattern: `\\b[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\\s"'<>()\\[\\]]+(?<![.,;:])` },
  { name: 'email', pattern: `(?<![\\w.%+-])[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\\.)+[A-Za-z]{2,}(?![\\w@])` },
  { name: 'uuid', pattern: `(?<![\\w-])${HEX}{8}-${HEX}{4}-${HEX}{4}-${HEX}{4}-${HEX}{12}(?![\\w-])` },
  {
    name: 'datetime',
    pattern: [
      // 2015-10-18, 2015-10-18T18:01:47.978+02:00, 2015-10-18 18:01:47,978
      `(?<!\\w)\\d{4}-\\d{2}-\\d{2}(?:[T ]\\d{2}:\\d{2}(?::\\d{2}(?:[.,]\\d+)?)?(?:Z|[+-]\\d{2}:?\\d{2})?)?(?!\\w)`,
      // Wed Jun 29 10:48:01 2005, Jun 14 15:16:01, Jun 14, 2005 15:16
      `(?<!\\w)(?:${WEEKDAY},?\\s+)?${MONTH}\\s+\\d{1,2},?(?:\\s+\\d{4})?\\s+\\d{1,2}:\\d{2}(?::\\d{2}(?:[.,]\\d+)?)?(?:\\s+\\d{4})?(?!\\w)`,
      // 04/Dec/2005:04:47:44 +0000 (access logs)
      `(?<!\\w)\\d{1,2}/${MONTH}/\\d{4}(?::\\d{2}:\\d{2}:\\d{2})?(?:\\s+[+-]\\d{4})?(?!\\w)`,
      // 17/06/09, 2005/12/04
      `(?<![\\w/])\\d{1,4}/\\d{1,2}/\\d{1,4}(?![\\w/])`,
      // 18:01:47, 18:01:47.978
      `(?<![\\w:.])\\d{1,2}:\\d{2}:\\d{2}(?:[.,]\\d+)?(?![\\w:])`,
    ].join('|'),
  },
  {
    name: 'ipv6',
    // Full, `::`-compressed and bracketed-with-port forms; at least one hex digit so `::` alone stays.
    pattern:
      `(?<![\\w:.])\\[?(?=[0-9a-fA-F:]*${HEX})` +
      `(?:(?:${HEX}{1,4}:){7}${HEX}{1,4}|(?:${HEX}{1,4}:){1,6}(?::${HEX}{1,4}){1,6}|(?:${HEX}{1,4}:){1,7}:|::(?:${HEX}{1,4}:){0,6}${HEX}{1,4})` +
      `(?:\\](?::\\d{1,5})?)?(?![\\w:])`,
  },
  { name: 'ipv4', pattern: `(?<![\\w.])(?:\\d{1,3}\\.){3}\\d{1,3}(?::\\d{1,5})?(?!\\w|\\.\\d)` },
  {
    name: 'host-port',
    pattern: `(?<![\\w.-])(?:localhost|[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+|[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+):\\d{1,5}(?!\\w)`,
  },
  { name: 'mac', pattern: `(?<![\\w:-])${HEX}{2}(?:[:-]${HEX}{2}){5}(?![\\w:-])` },
  // Long hex needs a digit and a letter, so plain words (`deadbeef`) and numbers keep their own rules.
  { name: 'hex', pattern: `(?<!\\w)(?:0[xX]${HEX}+|(?=[a-fA-F]*\\d)(?=\\d*[a-fA-F])${HEX}{8,})(?!\\w)` },
  {
    name: 'path',
    pattern: `(?<![\\w.~/-])(?:[A-Za-z]:\\\\[^\\s"'<>|]+|(?:~|\\.{1,2})?(?:/[\\w.@%+~:=$-]*)+\\*?)(?<![.,:])`,
  },
  {
    name: 'number',
    pattern:
      `(?<![A-Za-z0-9_.])[-+]?\\d+(?:\\.\\d+)*(?:[eE][-+]?\\d+)?` +
      // A unit belongs to its number (`12KB`, `3ms`); JVM logs also write sizes apart (`5.8 KB`).
      `(?:%|[KMGTP]i?B|[kKMGT]|ms|us|µs|ns|s|B|\\s(?:[KMGTP]i?B|B)(?![A-Za-z0-9_]))?(?![A-Za-z0-9_])`,
  },
];

const DEFAULT_PATTERNS = new Set(DEFAULT_MASK_RULES.map((r) => r.pattern));

export const DEFAULT_DRAIN_OPTIONS: Readonly<DrainOptions> = Object.freeze({
  similarityThreshold: 0.75,
  depth: 4,
  maxChildren: 100,
  maxClustersPerLeaf: 200,
  maskRules: DEFAULT_MASK_RULES,
  maskIdTokens: true,
  minWordVariants: 4,
  mergeClusters: true,
});

// ---------------------------------------------------------------------------------------------
// Masking and tokens

export interface Masker {
  /** The message with every variable replaced by `<*>`. */
  mask(message: string): string;
  /** The masked message split on whitespace: what the tree and the templates work on. */
  tokenize(message: string): string[];
  /** The tokens of a message already masked. */
  split(masked: string): string[];
}

/** A run of non-space characters, where a double-quoted span counts as non-space. */
const TOKEN = /(?:[^\s"]+|"[^"]*"|")+/g;

const PIECE_SEPARATORS = /([=:,;()[\]{}'"|]+)/;

/** Several digit groups (`rdd_42_7`) or a long digit run (`blk_1073741825`); `ssh2`, `i386` stay words. */
function looksLikeId(piece: string): boolean {
  let groups = 0;
  let run = 0;
  for (let i = 0; i < piece.length; i++) {
    const c = piece.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (run === 0) groups++;
      run++;
      if (groups >= 2 || run >= 4) return true;
    } else {
      run = 0;
    }
  }
  return false;
}

function maskIdPieces(token: string): string {
  if (!hasDigit(token)) return token;
  const parts = token.split(PIECE_SEPARATORS);
  let changed = false;
  // split() with a capture group alternates pieces (even) and separators (odd).
  for (let i = 0; i < parts.length; i += 2) {
    const part = parts[i];
    if (part && !part.includes(WILDCARD) && looksLikeId(part)) {
      parts[i] = WILDCARD;
      changed = true;
    }
  }
  return changed ? parts.join('') : token;
}

const SIGNED_MASK = `-${WILDCARD}`;
/** A token's shape in a list: its masks without their sign (`blk_-<*>` and `blk_<*>` are one shape). */
const listShape = (token: string) => token.replaceAll(SIGNED_MASK, WILDCARD);
/** Whether two tokens have one shape in a list; tokens that differ can share one only through a signed mask. */
const sameInList = (a: string, b: string) => a === b || ((a.includes(SIGNED_MASK) || b.includes(SIGNED_MASK)) && listShape(a) === listShape(b));
/** The longest repeating group of a list that collapses (`node-<*> <*> <ok>` is three). */
const LIST_PERIOD = 3;

/**
 * A list (`blk_<*> blk_-<*> …`, `<*> <*> <*>`, `node-<*> <*> <ok> node-<*> <*> <ok> …`) is one variable
 * however long: a group of up to three tokens, one of them masked, repeated right after itself is
 * kept once, so a list's length does not decide the line's template.
 */
function collapseLists(tokens: string[]): string[] {
  let out: string[] | undefined;
  for (let i = 0; i < tokens.length; ) {
    let repeat = 0;
    for (let k = 1; k <= LIST_PERIOD && repeat === 0 && i >= k && i + k <= tokens.length; k++) {
      const emitted = out ?? tokens;
      const end = out ? out.length : i;
      let masked = false;
      let same = end >= k;
      for (let j = 0; same && j < k; j++) {
        const token = tokens[i + j] as string;
        masked ||= token.includes(WILDCARD);
        same = sameInList(token, emitted[end - k + j] as string);
      }
      if (same && masked) repeat = k;
    }
    if (repeat > 0) {
      out ??= tokens.slice(0, i);
      i += repeat;
    } else {
      out?.push(tokens[i] as string);
      i++;
    }
  }
  return out ?? tokens;
}

export function createMasker(options: Pick<DrainOptions, 'maskRules' | 'maskIdTokens'>): Masker {
  // One alternation, one pass: a later rule never sees the `<*>` an earlier one produced, and at
  // each position the first rule in the list wins.
  const alternation = options.maskRules.map((r) => `(?:${r.pattern})`).join('|');
  // Every default rule starts at a word's start, with a word character or one of `[:~/.+%\-`: said
  // once in front, the checks reject a position inside a word or at a space before any rule is
  // tried (a third of the masking time, then a tenth more), matching the same text.
  const wordStart = options.maskRules.every((r) => DEFAULT_PATTERNS.has(r.pattern));
  const combined =
    options.maskRules.length > 0
      ? new RegExp(wordStart ? `(?<![A-Za-z0-9_])(?=[\\w\\[:~/.+%\\\\-])(?:${alternation})` : alternation, 'g')
      : undefined;
  const mask = (message: string) => (combined ? message.replace(combined, WILDCARD) : message);
  const split = (masked: string) => {
    // Quoted text is one token however many words it holds (`tag="View Lock"`), so a line's
    // length does not depend on what a variable says.
    const tokens = masked.match(TOKEN) ?? [];
    return collapseLists(options.maskIdTokens ? tokens.map(maskIdPieces) : tokens);
  };
  return { mask, split, tokenize: (message) => split(mask(message)) };
}

const defaultMasker = createMasker(DEFAULT_DRAIN_OPTIONS);
/** Masks a message with the default rules. */
export const mask = (message: string): string => defaultMasker.mask(message);
/** The tokens the miner sees for a message under the default rules. */
export const tokenize = (message: string): string[] => defaultMasker.tokenize(message);

const DIGIT = /\d/;
const hasDigit = (token: string) => DIGIT.test(token);
/** Routed to the wildcard child: a value rather than a keyword. */
const routesAsVariable = (token: string) => token.includes(WILDCARD) || hasDigit(token);

// Memo tables for per-token facts; tokens repeat heavily, so these stay small and save regex work.
const MEMO_LIMIT = 50_000;
function memo<T>(compute: (token: string) => T): (token: string) => T {
  const table = new Map<string, T>();
  return (token) => {
    let value = table.get(token);
    if (value === undefined) {
      value = compute(token);
      if (table.size >= MEMO_LIMIT) table.clear();
      table.set(token, value);
    }
    return value;
  };
}

/** A mask glued to letters (`blk_<*>`, `node-a-<*>`) makes the whole token an identifier. */
const GLUED_MASK = /[A-Za-z][-_.#]?<\*>|<\*>[-_.#]?[A-Za-z]/;
/** A qualified name (`com.example.app.Main`, `system.call.count`): a value, as class and package names are. */
const QUALIFIED_NAME = /[A-Za-z_$][\w$]*\.[A-Za-z_$][\w$]*\.[A-Za-z_$]/;
/**
 * A qualified name ending in a constant (`android.intent.action.SCREEN_ON`) names one
 * thing of a fixed set, as a word does: `SCREEN_ON` and `SCREEN_OFF` are two events until more show up.
 */
const NAMED_CONSTANT = /\.[A-Z][A-Z_]{2,}[,;:)]*$/;
/** Quoted text (`"disk full"`, `"timeout",`): free text, whatever it says. */
const QUOTED = /^"[^"]*"[,;:.)]*$/;
const looksVariable = memo(
  (token) =>
    token === WILDCARD ||
    hasDigit(token) ||
    GLUED_MASK.test(token) ||
    (QUALIFIED_NAME.test(token) && !NAMED_CONSTANT.test(token)) ||
    QUOTED.test(token),
);

/**
 * A word with a version digit (`SOCKS5`, `HTTP2`, `ssh2`, `IPv6`) names a thing, as a plain word does:
 * `… through proxy <*> HTTPS` and `… SOCKS5` are two events until more such words show up there;
 * the same word with another digit (`IRQ0` / `IRQ9`) is another instance of one thing, a value.
 */
const VERSIONED_WORD = /^[A-Za-z]{3,}\d[,;:.)]*$/;
const numberedName = (token: string) => (VERSIONED_WORD.test(token) ? token.replace(/\d[,;:.)]*$/, '') : undefined);
const quotedVerb = (token: string) => /^"([A-Z]{3,})\s/.exec(token)?.[1];
const readsAsValue = (token: string) => looksVariable(token) && !VERSIONED_WORD.test(token);

/** A template token with `<*>` inside (`rhost=<*>`) split around its wildcards. */
const globParts = memo((pattern) => pattern.split(WILDCARD));

/**
 * Glob match by leftmost search, linear in the token: a regex built from a long masked token
 * (`<*>,<*>,…`) backtracks exponentially on a miss. `<*>` may match nothing (an empty `ruser=`).
 */
function globMatches(pattern: string, token: string): boolean {
  const parts = globParts(pattern);
  const head = parts[0] ?? '';
  const tail = parts.length > 1 ? (parts[parts.length - 1] ?? '') : '';
  if (parts.length < 2) return pattern === token;
  if (token.length < head.length + tail.length || !token.startsWith(head) || !token.endsWith(tail)) return false;
  const end = token.length - tail.length;
  let at = head.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i] ?? '';
    const found = token.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/**
 * The key of a structured token (`ready=` in `ready=true,policy=3`, `index:` in `index:4`,
 * `cancelNotification,` in `cancelNotification,index:0`): tokens with different keys say different
 * things, whatever values follow.
 */
const keyOf = memo((token) => /^[A-Za-z][A-Za-z_]+[=:,|({[]/.exec(token)?.[0]);

/** A value that varies by nature: a number, a mask, a qualified name, quoted text, or nothing. */
const NULLISH = new Set(['', 'null', 'none', 'nil', 'undefined', '-']);
const variableValue = memo((value) => {
  const bare = value.replace(/[,;]+$/, '');
  return NULLISH.has(bare.toLowerCase()) || looksVariable(bare) || bare.startsWith('"') || bare.includes(WILDCARD);
});

/**
 * Compares two tokens of one key: 'value' where both values vary by nature (`uid=0`/`uid=<*>`,
 * `ws=null`/`ws=WorkSource{<*>}`), 'word' where both are plain words (`expand=true`/`expand=false`,
 * distinct events until minWordVariants of them show up), undefined otherwise.
 */
function keyedDifference(a: string, b: string): 'value' | 'word' | undefined {
  const key = keyOf(a);
  if (key === undefined || key !== keyOf(b)) return undefined;
  const va = variableValue(a.slice(key.length));
  const vb = variableValue(b.slice(key.length));
  return va && vb ? 'value' : !va && !vb ? 'word' : undefined;
}

/** Letters that read as a word (three in a row), as opposed to a bare value or a mask. */
const hasWord = memo((token) => /[A-Za-z]{3}/.test(token.replaceAll(WILDCARD, ' ')));

/** The tree's key for a token: `<*>` for a value, `key=<*>` for a keyed value, else the token. */
function routeKey(token: string): string {
  if (routesAsVariable(token)) return WILDCARD;
  const key = keyOf(token);
  return key !== undefined && variableValue(token.slice(key.length)) ? key + WILDCARD : token;
}

/** Whether a template token accepts a line token. */
function tokenMatches(templateToken: string, token: string): boolean {
  if (templateToken === token || templateToken === WILDCARD) return true;
  return templateToken.includes(WILDCARD) && globMatches(templateToken, token);
}

/**
 * Two differing tokens that both read as text differ in wording (`bytes`/`values`,
 * `(uid=<*>)`/`LOGIN(uid=<*>)`), unless the line's token is a more general form of the template's.
 */
function isWordDifference(templateToken: string, token: string): boolean {
  const a = keyOf(templateToken);
  const b = keyOf(token);
  if (a !== undefined && b !== undefined) {
    if (a !== b) return true;
    const kind = keyedDifference(templateToken, token);
    if (kind !== undefined) return kind === 'word';
  } else if ((a ?? b) !== undefined && hasWord(a === undefined ? templateToken : token)) {
    // `ready=true,policy=3` against `isBluetoothA2dpOn...`: a keyed token and a wordy one.
    return true;
  }
  // Quoted text is free text, but a quote that opens with a verb in capitals says what happened
  // (`"GET /v2/… HTTP/1.1"` / `"DELETE …"`, `"SELECT …"` / `"UPDATE …"`).
  const verb = quotedVerb(templateToken);
  if (verb !== undefined && quotedVerb(token) !== undefined) return verb !== quotedVerb(token);
  // One name numbered differently (`IRQ0` / `IRQ9`, `eth0` / `eth1`) is one thing's instances.
  const numbered = numberedName(templateToken);
  if (numbered !== undefined && numbered === numberedName(token)) return false;
  if (readsAsValue(templateToken) || readsAsValue(token)) return false;
  return !(token.includes(WILDCARD) && globMatches(token, templateToken));
}

const SEPARATOR_CHARS = new Set([...'=:,;()[]{}\'"|/@#$']);

/**
 * The narrowest template token covering both. A shared key such as `rhost=` is kept, cut at a
 * separator so `news`/`cyrus` do not become `<*>s`.
 */
function generaliseToken(a: string, b: string): string {
  if (a === b) return a;
  if (a === WILDCARD || b === WILDCARD) return WILDCARD;
  const max = Math.min(a.length, b.length);
  let prefix = 0;
  for (let i = 0; i < max && a[i] === b[i]; i++) if (SEPARATOR_CHARS.has(a[i] ?? '')) prefix = i + 1;
  let suffix = 0;
  for (let i = 1; i <= max - prefix && a[a.length - i] === b[b.length - i]; i++) {
    if (SEPARATOR_CHARS.has(a[a.length - i] ?? '')) suffix = i;
  }
  if (prefix === 0 && suffix === 0) return WILDCARD;
  return (a.slice(0, prefix) + WILDCARD + a.slice(a.length - suffix)).replaceAll(`${WILDCARD}${WILDCARD}`, WILDCARD);
}

// ---------------------------------------------------------------------------------------------
// Miner

interface Cluster {
  id: number;
  tokens: string[];
  size: number;
  /** Positions whose `<*>` stands for one or more tokens; undefined while every position is one token. */
  spans?: boolean[];
}

interface TreeNode {
  children: Map<string, TreeNode>;
  /** Cluster ids, least recently matched first. */
  clusters: number[];
}

const newNode = (): TreeNode => ({ children: new Map(), clusters: [] });

interface Candidate {
  cluster: Cluster;
  similarity: number;
  params: number;
  /** Positions where template and line hold different plain words. */
  wordDiffs: number[];
  /** For a template with spans: the line position each template position starts at. */
  starts?: number[];
}

type Decision =
  | { kind: 'join'; cluster: Cluster; starts?: number[] }
  | { kind: 'variants'; clusters: Cluster[] }
  | { kind: 'new' };

export interface ClusterInfo {
  id: number;
  template: string;
  size: number;
}

export interface AddResult {
  clusterId: number;
  template: string;
  /** A new cluster, or the template of an existing one widened. */
  changed: boolean;
}

export interface MatchResult {
  clusterId: number;
  template: string;
}

export interface SerializedNode {
  children: [string, SerializedNode][];
  clusters: number[];
}

export interface MinerState {
  version: 1;
  options: DrainOptions;
  nextId: number;
  /** `spans` lists the positions whose `<*>` covers any number of tokens (absent: none). */
  clusters: { id: number; tokens: string[]; size: number; spans?: number[] }[];
  /** Merged-away cluster ids and the id that absorbed them. */
  aliases: [number, number][];
  /** Root children by token count. */
  tree: [number, SerializedNode][];
}

export class TemplateMiner {
  readonly options: Readonly<DrainOptions>;
  private readonly masker: Masker;
  private readonly byId = new Map<number, Cluster>();
  private readonly aliases = new Map<number, number>();
  private readonly root = new Map<number, TreeNode>();
  /**
   * Clusters by the first constant tokens of their template, ascending ids: where a line that fits
   * no template of its own length looks for one of another length. Derived from the clusters alone,
   * so a restored miner rebuilds it as it was.
   */
  private readonly byLeadingWord = new Map<string, number[]>();
  private readonly leadingWords = new Map<number, string[]>();
  private nextId = 1;
  /**
   * Where lines went lately, by their masked text: a line masked as one seen since the last change
   * to any template or leaf joins the same cluster, as the tree would send it, without the walk.
   * Variables masked, real logs repeat a few hundred shapes, so most lines take this path.
   */
  private readonly recent = new Map<string, { tokens: string[]; clusterId: number; leaf: TreeNode; generation: number }>();
  /** Bumped by every change to a template or to a leaf's clusters; entries of `recent` from before are stale. */
  private generation = 0;

  constructor(options: Partial<DrainOptions> = {}) {
    this.options = Object.freeze({ ...DEFAULT_DRAIN_OPTIONS, ...options });
    const { similarityThreshold, depth, maxChildren, maxClustersPerLeaf, minWordVariants } = this.options;
    if (!(similarityThreshold >= 0 && similarityThreshold <= 1)) {
      throw new RangeError('similarityThreshold must be within [0, 1]');
    }
    const integers: [string, number, number][] = [
      ['depth', depth, 3],
      ['maxChildren', maxChildren, 2],
      ['maxClustersPerLeaf', maxClustersPerLeaf, 1],
      ['minWordVariants', minWordVariants, 1],
    ];
    for (const [name, value, min] of integers) {
      if (!Number.isInteger(value) || value < min) throw new RangeError(`${name} must be an integer of at least ${min}`);
    }
    this.masker = createMasker(this.options);
  }

  /** Learns from a line: puts it in a cluster, widening or merging templates as needed. */
  add(message: string): AddResult {
    const { cluster, changed } = this.learn(message);
    return { clusterId: cluster.id, template: cluster.tokens.join(' '), changed };
  }

  /** As `add`, answering the cluster's id alone: what a run over many lines needs, without the template's text. */
  assign(message: string): number {
    return this.learn(message).cluster.id;
  }

  private learn(message: string): { cluster: Cluster; changed: boolean } {
    const masked = this.masker.mask(message);
    const seen = this.recent.get(masked);
    if (seen?.generation === this.generation) {
      const cluster = this.byId.get(seen.clusterId);
      if (cluster && !cluster.spans && fitsAsIs(cluster.tokens, seen.tokens)) {
        cluster.size++;
        touch(seen.leaf, cluster.id);
        return { cluster, changed: false };
      }
    }
    const tokens = this.masker.split(masked);
    const leaf = this.leafFor(tokens, true);
    this.renewMerged(leaf);
    const decision = this.decide(leaf, tokens);
    const spanned = decision.kind === 'new' ? this.spanFor(tokens) : undefined;
    let cluster: Cluster;
    let changed = true;
    if (spanned) {
      cluster = spanned.cluster;
      changed = spanned.tokens.join(' ') !== cluster.tokens.join(' ') || !sameSpans(cluster.spans, spanned.spans);
      cluster.tokens = spanned.tokens;
      cluster.spans = spanned.spans;
      // Lines of this length find the template in their own leaf from now on.
      if (!leaf.clusters.includes(cluster.id)) {
        leaf.clusters.push(cluster.id);
        this.evictBeyondCapacity(leaf);
      }
    } else if (decision.kind === 'new') {
      cluster = { id: this.nextId++, tokens, size: 0 };
      this.byId.set(cluster.id, cluster);
      leaf.clusters.push(cluster.id);
      this.evictBeyondCapacity(leaf);
    } else if (decision.kind === 'variants') {
      const [keep, ...rest] = [...decision.clusters].sort((a, b) => a.id - b.id);
      if (!keep) throw new Error('unreachable: variants without clusters');
      for (const drop of rest) this.absorb(leaf, keep, drop);
      generaliseInto(keep, tokens);
      cluster = keep;
    } else {
      cluster = decision.cluster;
      changed = decision.starts ? generaliseAcross(cluster, tokens, decision.starts) : generaliseInto(cluster, tokens);
    }
    cluster.size++;
    touch(leaf, cluster.id);
    if (changed) this.index(cluster);
    if (changed && this.options.mergeClusters) {
      cluster = this.mergeCovered(cluster.spans ? cluster : this.mergeEquivalents(leaf, cluster));
    }
    if (changed || decision.kind !== 'join' || spanned) this.generation++;
    if (this.recent.size >= RECENT_LIMIT) this.recent.clear();
    this.recent.set(masked, { tokens: [...tokens], clusterId: cluster.id, leaf, generation: this.generation });
    return { cluster, changed };
  }

  /** The cluster `add` would put the line in, learning nothing; undefined where it would start one. */
  match(message: string): MatchResult | undefined {
    const tokens = this.masker.tokenize(message);
    const leaf = this.leafFor(tokens, false);
    const decision = leaf && this.decide(leaf, tokens);
    if (decision?.kind === 'join') return { clusterId: decision.cluster.id, template: decision.cluster.tokens.join(' ') };
    const spanned = decision?.kind === 'variants' ? undefined : this.spanFor(tokens);
    return spanned && { clusterId: spanned.cluster.id, template: spanned.cluster.tokens.join(' ') };
  }

  /** The live cluster for an id handed out earlier, following merges. */
  resolve(id: number): number {
    let current = id;
    for (let next = this.aliases.get(current); next !== undefined; next = this.aliases.get(current)) current = next;
    return current;
  }

  /** The template of a live cluster. */
  template(id: number): string | undefined {
    return this.byId.get(id)?.tokens.join(' ');
  }

  clusters(): ClusterInfo[] {
    return [...this.byId.values()].map((c) => ({ id: c.id, template: c.tokens.join(' '), size: c.size }));
  }

  toJSON(): MinerState {
    const serialize = (node: TreeNode): SerializedNode => ({
      children: [...node.children].map(([key, child]) => [key, serialize(child)]),
      clusters: [...node.clusters],
    });
    return {
      version: 1,
      // Options travel with the state: the templates were built under these rules, so a restored
      // miner keeps them even after the defaults change.
      options: { ...this.options, maskRules: this.options.maskRules.map((r) => ({ ...r })) },
      nextId: this.nextId,
      clusters: [...this.byId.values()].map((c) => {
        const spans = c.spans?.flatMap((span, i) => (span ? [i] : []));
        return { id: c.id, tokens: [...c.tokens], size: c.size, ...(spans && { spans }) };
      }),
      aliases: [...this.aliases],
      tree: [...this.root].map(([length, node]) => [length, serialize(node)]),
    };
  }

  static fromJSON(state: MinerState): TemplateMiner {
    if (state.version !== 1) throw new Error(`Unsupported miner state version ${String(state.version)}`);
    const miner = new TemplateMiner(state.options);
    miner.nextId = state.nextId;
    for (const c of state.clusters) {
      // States written before templates had spans carry no `spans`: every position is one token.
      const spans = c.spans && c.tokens.map((_, i) => c.spans?.includes(i) ?? false);
      miner.byId.set(c.id, { id: c.id, tokens: [...c.tokens], size: c.size, ...(spans && { spans }) });
    }
    for (const id of [...miner.byId.keys()].sort((a, b) => a - b)) {
      const cluster = miner.byId.get(id);
      if (cluster) miner.index(cluster);
    }
    for (const [from, to] of state.aliases) miner.aliases.set(from, to);
    const deserialize = (node: SerializedNode): TreeNode => ({
      children: new Map(node.children.map(([key, child]) => [key, deserialize(child)])),
      clusters: [...node.clusters],
    });
    for (const [length, node] of state.tree) miner.root.set(length, deserialize(node));
    return miner;
  }

  private leafFor(tokens: string[], create: true): TreeNode;
  private leafFor(tokens: string[], create: false): TreeNode | undefined;
  private leafFor(tokens: string[], create: boolean): TreeNode | undefined {
    let node: TreeNode | undefined = this.root.get(tokens.length);
    if (!node && create) this.root.set(tokens.length, (node = newNode()));
    const prefix = Math.min(this.options.depth - 2, tokens.length);
    for (let i = 0; node && i < prefix; i++) {
      const token = tokens[i] ?? WILDCARD;
      const key = routeKey(token);
      const next = node.children.get(key);
      if (next) node = next;
      else node = create ? this.childFor(node, key) : node.children.get(WILDCARD);
    }
    return node;
  }

  private childFor(node: TreeNode, key: string): TreeNode {
    // One slot stays for the wildcard child, so a position with endless distinct words ends up
    // sharing `<*>` instead of growing the tree without bound.
    const reserved = node.children.has(WILDCARD) ? 0 : 1;
    const target = key !== WILDCARD && node.children.size + reserved < this.options.maxChildren ? key : WILDCARD;
    let child = node.children.get(target);
    if (!child) node.children.set(target, (child = newNode()));
    return child;
  }

  private decide(leaf: TreeNode, tokens: string[]): Decision {
    const allowed = Math.max(1, Math.floor(tokens.length * (1 - this.options.similarityThreshold) + 1e-9));
    const candidates: Candidate[] = [];
    for (const id of leaf.clusters) {
      // A leaf also lists templates with spans that lines of its length have joined; ids merged
      // away elsewhere linger there and are skipped.
      const cluster = this.byId.get(id);
      const candidate = cluster && (cluster.spans ? scoreAcross(cluster, tokens) : score(cluster, tokens, allowed));
      if (candidate) candidates.push(candidate);
    }
    const best = pickBest(candidates.filter((c) => c.wordDiffs.length === 0)) ?? pickBest(candidates);
    if (!best) return { kind: 'new' };
    if (best.wordDiffs.length === 0 || this.options.minWordVariants <= 1) {
      return { kind: 'join', cluster: best.cluster, ...(best.starts && { starts: best.starts }) };
    }
    // Lines that differ in a word are often distinct events (`stored as bytes` / `stored as
    // values`); the position turns into `<*>` only once minWordVariants words have shown up there.
    const key = best.wordDiffs.join(',');
    const variants = candidates.filter((c) => c.wordDiffs.join(',') === key).map((c) => c.cluster);
    // Nor does a template lose its last constant word that way: lines of one word each
    // (`ready=true,policy=3,…`, `cancelNotification,index:0`) are as many events.
    const keepsAWord = best.cluster.tokens.some((t, i) => t !== WILDCARD && !best.wordDiffs.includes(i));
    return keepsAWord && variants.length + 1 >= this.options.minWordVariants
      ? { kind: 'variants', clusters: variants }
      : { kind: 'new' };
  }

  private evictBeyondCapacity(leaf: TreeNode): void {
    // Bounds the per-line scan when a leaf fills with one-off lines; the cluster stays listed and
    // resolvable, it just no longer attracts new lines.
    while (leaf.clusters.length > this.options.maxClustersPerLeaf) leaf.clusters.shift();
  }

  private absorb(leaf: TreeNode, keep: Cluster, drop: Cluster): void {
    keep.tokens = keep.tokens.map((t, i) => generaliseToken(t, drop.tokens[i] ?? WILDCARD));
    keep.size += drop.size;
    this.byId.delete(drop.id);
    this.aliases.set(drop.id, keep.id);
    const at = leaf.clusters.indexOf(drop.id);
    if (at >= 0) leaf.clusters.splice(at, 1);
    this.unindex(drop.id);
    this.index(keep);
  }

  /**
   * A leaf may list a template with spans merged away from another leaf: the cluster that absorbed
   * it takes its place, so lines of this length keep finding it here.
   */
  private renewMerged(leaf: TreeNode): void {
    for (let k = 0; k < leaf.clusters.length; k++) {
      const id = leaf.clusters[k] ?? 0;
      if (this.byId.has(id)) continue;
      const live = this.resolve(id);
      if (this.byId.has(live) && !leaf.clusters.includes(live)) leaf.clusters[k] = live;
      else leaf.clusters.splice(k--, 1);
    }
  }

  /**
   * Clusters a template with spans turns out to cover (lines of one event that met different
   * templates first, `firefox.exe - … close, <*> bytes sent, …` beside `<*> - … close, <*> sent,
   * …`) are merged into it, or it into one covering it; two templates with spans that align are
   * merged too. The older id survives, with the covering template.
   */
  private mergeCovered(cluster: Cluster): Cluster {
    let survivor = cluster;
    for (const other of this.indexed(survivor.tokens, survivor.id)) {
      if (!this.byId.has(other.id) || !this.byId.has(survivor.id)) continue;
      let merged: { tokens: string[]; spans?: boolean[] } | undefined = covers(survivor, other)
        ? survivor
        : covers(other, survivor)
          ? other
          : undefined;
      // Two templates with spans of one event, each wider somewhere (`lifetime <*>` / `lifetime
      // <<*> sec`), meet in the template covering both.
      if (!merged && survivor.spans && other.spans) merged = alignAcross(survivor, other.tokens);
      if (!merged) continue;
      const [keep, drop] = other.id < survivor.id ? [other, survivor] : [survivor, other];
      keep.tokens = [...merged.tokens];
      keep.spans = merged.spans && [...merged.spans];
      keep.size += drop.size;
      this.byId.delete(drop.id);
      this.aliases.set(drop.id, keep.id);
      this.unindex(drop.id);
      this.index(keep);
      survivor = keep;
    }
    return survivor;
  }

  /** The clusters filed under a line's first constant tokens, newest first, each once. */
  private indexed(tokens: string[], except?: number): Cluster[] {
    const found: Cluster[] = [];
    const seen = new Set<number>(except === undefined ? [] : [except]);
    let keys = 0;
    for (const token of tokens) {
      if (!isAnchor(token)) continue;
      if (keys++ === SPAN_LOOKUP_TOKENS) break;
      const ids = this.byLeadingWord.get(token) ?? [];
      for (let k = ids.length - 1; k >= 0 && k >= ids.length - SPAN_CANDIDATES_PER_KEY; k--) {
        const id = ids[k] ?? 0;
        const cluster = seen.has(id) ? undefined : this.byId.get(id);
        seen.add(id);
        if (cluster) found.push(cluster);
      }
    }
    return found;
  }

  /**
   * Files a cluster under the first constant tokens of its template, after any change to it. Two of
   * them, because the first is often what varies between lines (`chrome.exe -` / `Dropbox.exe -`).
   */
  private index(cluster: Cluster): void {
    const keys: string[] = [];
    for (let i = 0; i < cluster.tokens.length && keys.length < SPAN_INDEX_TOKENS; i++) {
      const token = cluster.tokens[i] ?? WILDCARD;
      if (!cluster.spans?.[i] && isAnchor(token) && !keys.includes(token)) keys.push(token);
    }
    const current = this.leadingWords.get(cluster.id);
    if (current?.join(' ') === keys.join(' ')) return;
    this.unindex(cluster.id);
    if (keys.length === 0) return;
    this.leadingWords.set(cluster.id, keys);
    for (const key of keys) {
      let ids = this.byLeadingWord.get(key);
      if (!ids) this.byLeadingWord.set(key, (ids = []));
      // Ascending ids whatever the order of changes, so the index depends on the clusters alone.
      let at = ids.length;
      while (at > 0 && (ids[at - 1] ?? 0) > cluster.id) at--;
      ids.splice(at, 0, cluster.id);
    }
  }

  private unindex(id: number): void {
    for (const key of this.leadingWords.get(id) ?? []) {
      const ids = this.byLeadingWord.get(key) ?? [];
      const at = ids.indexOf(id);
      if (at >= 0) ids.splice(at, 1);
      if (ids.length === 0) this.byLeadingWord.delete(key);
    }
    this.leadingWords.delete(id);
  }

  /**
   * For a line no template of its length takes: the cluster of another length (or with spans) it
   * aligns with best, and the template covering both. Learns nothing. Bounded: only clusters filed
   * under one of the line's first constant tokens are compared, the newest of each few.
   */
  private spanFor(tokens: string[]): SpanAlignment | undefined {
    if (tokens.length > SPAN_MAX_TOKENS) return undefined;
    let best: SpanAlignment | undefined;
    for (const cluster of this.indexed(tokens)) {
      const length = cluster.tokens.length;
      // Lines of the template's own length were judged position by position in their leaf.
      if (!cluster.spans && length === tokens.length) continue;
      if (length > SPAN_MAX_TOKENS || Math.abs(length - tokens.length) > SPAN_MAX_LENGTH_GAP) continue;
      const aligned = alignAcross(cluster, tokens);
      if (aligned && (!best || aligned.anchors > best.anchors || (aligned.anchors === best.anchors && cluster.id < best.cluster.id))) {
        best = aligned;
      }
    }
    return best;
  }

  /**
   * A line more than the threshold away from every template starts a cluster even when all its
   * differences are values (`Registering class <*> for class <*>` with two long class names);
   * once templates show that, the clusters are merged. The older id survives.
   */
  private mergeEquivalents(leaf: TreeNode, cluster: Cluster): Cluster {
    let survivor = cluster;
    for (const id of [...leaf.clusters]) {
      const other = id === survivor.id ? undefined : this.byId.get(id);
      if (!other || other.spans || other.tokens.length !== survivor.tokens.length) continue;
      if (!mergeable(survivor.tokens, other.tokens)) continue;
      const [keep, drop] = other.id < survivor.id ? [other, survivor] : [survivor, other];
      this.absorb(leaf, keep, drop);
      survivor = keep;
    }
    return survivor;
  }
}

/** Moves a cluster to the most recently matched end of its leaf. */
/** Masked lines remembered at most (see `recent`): a few MB. */
const RECENT_LIMIT = 20_000;

/** Whether a template takes the line as it stands, one token per position. */
function fitsAsIs(template: string[], tokens: string[]): boolean {
  if (template.length !== tokens.length) return false;
  for (let i = 0; i < tokens.length; i++) if (!tokenMatches(template[i] ?? WILDCARD, tokens[i] ?? '')) return false;
  return true;
}

function touch(leaf: TreeNode, id: number): void {
  const at = leaf.clusters.indexOf(id);
  if (at >= 0 && at !== leaf.clusters.length - 1) {
    leaf.clusters.splice(at, 1);
    leaf.clusters.push(id);
  }
}

/** Scores a cluster for a line, or undefined once more than `allowed` positions disagree. */
function score(cluster: Cluster, tokens: string[], allowed: number): Candidate | undefined {
  const template = cluster.tokens;
  let params = 0;
  let mismatches = 0;
  let wordDiffs: number[] | undefined;
  for (let i = 0; i < template.length; i++) {
    const t = template[i] ?? WILDCARD;
    const token = tokens[i] ?? WILDCARD;
    if (t === WILDCARD) {
      params++;
    } else if (!tokenMatches(t, token)) {
      if (keyedDifference(t, token) === 'value') {
        params++;
        continue;
      }
      if (++mismatches > allowed) return undefined;
      if (isWordDifference(t, token)) (wordDiffs ??= []).push(i);
    }
  }
  const similarity = template.length === 0 ? 1 : (template.length - mismatches) / template.length;
  return { cluster, similarity, params, wordDiffs: wordDiffs ?? [] };
}

/** Highest similarity; on a tie the more specific template (fewer `<*>`), then the older cluster. */
function pickBest(candidates: Candidate[]): Candidate | undefined {
  let best: Candidate | undefined;
  for (const c of candidates) {
    if (
      !best ||
      c.similarity > best.similarity ||
      (c.similarity === best.similarity &&
        (c.params < best.params || (c.params === best.params && c.cluster.id < best.cluster.id)))
    ) {
      best = c;
    }
  }
  return best;
}

/** Widens a template so it covers the line; reports whether it changed. */
function generaliseInto(cluster: Cluster, tokens: string[]): boolean {
  let changed = false;
  for (let i = 0; i < cluster.tokens.length; i++) {
    const current = cluster.tokens[i] ?? WILDCARD;
    const token = tokens[i] ?? WILDCARD;
    if (!tokenMatches(current, token)) {
      cluster.tokens[i] = generaliseToken(current, token);
      changed = true;
    }
  }
  return changed;
}

/** Same length, at least one shared keyword, and no position where the wording differs. */
function mergeable(a: string[], b: string[]): boolean {
  let sharedKeywords = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? WILDCARD;
    const y = b[i] ?? WILDCARD;
    if (x === y) {
      if (!looksVariable(x) && !x.includes(WILDCARD)) sharedKeywords++;
    } else if (!tokenMatches(x, y) && !tokenMatches(y, x) && (isWordDifference(x, y) || isWordDifference(y, x))) {
      return false;
    }
  }
  return sharedKeywords > 0;
}

// ---------------------------------------------------------------------------------------------
// Variable parts spanning several tokens

/** Lines longer than this keep to templates of their own length: alignment is quadratic. */
const SPAN_MAX_TOKENS = 48;
/** Templates whose length differs from the line's by more than this are not compared. */
const SPAN_MAX_LENGTH_GAP = 16;
/** How many of a template's first constant tokens it is filed under. */
const SPAN_INDEX_TOKENS = 2;
/** How many of a line's first constant tokens are looked up in the index. */
const SPAN_LOOKUP_TOKENS = 3;
/** The newest clusters compared per looked-up token. */
const SPAN_CANDIDATES_PER_KEY = 24;
/** Wordy constant tokens two lines must share, in order, to be one event of varying length. */
const SPAN_MIN_ANCHORS = 2;

interface SpanAlignment {
  cluster: Cluster;
  tokens: string[];
  spans: boolean[];
  /** Wordy constant tokens the template and the line share. */
  anchors: number;
}

/** A constant token: what two lines of one event must share to align. */
const isAnchor = memo((token) => !looksVariable(token) && !token.includes(WILDCARD));

/** A value, masked or not (`<*>`, `(<*>`, `*<*>`, `42`): text that differs from line to line. */
const isValue = (token: string) => token.includes(WILDCARD) || looksVariable(token);

function sameSpans(a: boolean[] | undefined, b: boolean[]): boolean {
  return a !== undefined && a.length === b.length && a.every((span, i) => span === b[i]);
}

/** A line token a one-token template position accepts. */
const fits = (templateToken: string, token: string) =>
  tokenMatches(templateToken, token) || keyedDifference(templateToken, token) === 'value';

/**
 * Where each position of a template with spans starts in the line, or undefined when the line does
 * not fit: constants and one-token values take one token each, a span one or more. Dynamic
 * programming over (position, token), linear in their product; the shortest spans win.
 */
function matchAcross(template: string[], spans: boolean[], line: string[]): number[] | undefined {
  const n = template.length;
  const m = line.length;
  if (m < n || m > SPAN_MAX_TOKENS) return undefined;
  const width = m + 1;
  const reach = new Uint8Array((n + 1) * width);
  reach[0] = 1;
  for (let i = 0; i < n; i++) {
    const row = i * width;
    const next = row + width;
    const t = template[i] ?? WILDCARD;
    if (spans[i]) {
      // A span's first token fits its head (`reason=<*>` takes `reason=connection reset by peer`).
      let reached = false;
      for (let j = 1; j <= m; j++) {
        reached ||= reach[row + j - 1] === 1 && (t === WILDCARD || fits(t, line[j - 1] ?? ''));
        if (reached) reach[next + j] = 1;
      }
    } else {
      let any = false;
      for (let j = 0; j < m; j++) {
        if (reach[row + j] === 1 && fits(t, line[j] ?? '')) {
          reach[next + j + 1] = 1;
          any = true;
        }
      }
      if (!any) return undefined;
    }
  }
  if (reach[n * width + m] !== 1) return undefined;
  const starts = new Array<number>(n);
  let j = m;
  for (let i = n - 1; i >= 0; i--) {
    if (spans[i]) {
      const t = template[i] ?? WILDCARD;
      do j--;
      while (reach[i * width + j] !== 1 || !(t === WILDCARD || fits(t, line[j] ?? '')));
    } else {
      j--;
    }
    starts[i] = j;
  }
  return starts;
}

/** Whether a template with spans takes every line another template takes. */
function covers(cover: Cluster, other: Cluster): boolean {
  if (!cover.spans) return false;
  const starts = matchAcross(cover.tokens, cover.spans, other.tokens);
  // A span of the other template must fall within a span of the cover, not on one token.
  return starts !== undefined && (other.spans ?? []).every((span, j) => !span || cover.spans?.[spanAt(starts, j)] === true);
}

/** The template position whose tokens include line position j, given where each position starts. */
function spanAt(starts: number[], j: number): number {
  let i = 0;
  while (i + 1 < starts.length && (starts[i + 1] ?? Infinity) <= j) i++;
  return i;
}

/** Scores a template with spans: it takes the line whole or not at all. */
function scoreAcross(cluster: Cluster, tokens: string[]): Candidate | undefined {
  const starts = matchAcross(cluster.tokens, cluster.spans ?? [], tokens);
  if (!starts) return undefined;
  let params = 0;
  for (const t of cluster.tokens) if (t.includes(WILDCARD)) params++;
  return { cluster, similarity: 1, params, wordDiffs: [], starts };
}

/** Widens the one-token positions of a template with spans to cover the line they matched. */
function generaliseAcross(cluster: Cluster, tokens: string[], starts: number[]): boolean {
  let changed = false;
  for (let i = 0; i < cluster.tokens.length; i++) {
    if (cluster.spans?.[i]) continue;
    const current = cluster.tokens[i] ?? WILDCARD;
    const token = tokens[starts[i] ?? 0] ?? WILDCARD;
    if (!tokenMatches(current, token)) {
      cluster.tokens[i] = generaliseToken(current, token);
      changed = true;
    }
  }
  return changed;
}

interface Gap {
  /** Template positions [t0, t1) and line positions [l0, l1) between two shared constants. */
  t0: number;
  t1: number;
  l0: number;
  l1: number;
}

const OPENERS: Record<string, string> = { '[': ']', '(': ')', '{': '}', '<': '>' };

/** A bracketed run (`[alice, bob]`, `(a b c)`): a list, whatever it holds. */
function bracketed(tokens: string[]): string | undefined {
  const first = tokens[0] ?? '';
  const close = OPENERS[first[0] ?? ''];
  const last = (tokens[tokens.length - 1] ?? '').replace(/[,;:.]+$/, '');
  return close !== undefined && last.endsWith(close) && !(tokens.length === 1 && last.length < 2) ? first[0] : undefined;
}

/** The `key=` of a token, when it has one. */
const assignedKey = (token: string) => {
  const key = keyOf(token);
  return key?.endsWith('=') ? key : undefined;
};

/** The keys a stretch assigns, in order: lines that set other keys are other events. */
const keysOf = (tokens: string[]) => tokens.map(assignedKey).filter((k) => k !== undefined).join(' ');

const UNIT = /^\(?[A-Za-z]{1,7}\)?[,;:.]?$/;

/** Whether the stretch's one plain word follows a value and reads as a unit (`sec`, `bytes)`, `KB`). */
function unitAfterValue(tokens: string[], spans: boolean[]): boolean {
  const at = tokens.findIndex((t, i) => !spans[i] && !isValue(t));
  return at > 0 && UNIT.test(tokens[at] ?? '') && (spans[at - 1] === true || isValue(tokens[at - 1] ?? ''));
}

const plainWords = (tokens: string[], spans: boolean[]) => tokens.filter((t, i) => !spans[i] && !isValue(t)).length;

/** Prose: words only, no value and no key among them. */
const prose = (tokens: string[]) => tokens.every((t) => !isValue(t) && assignedKey(t) === undefined);

/** A template in the making: tokens and whether each is a span. */
interface Draft {
  tokens: string[];
  spans: boolean[];
  /** Words of the template given up to spans of values and lists. */
  lostWords: number;
}

/**
 * Adds a stretch of as many template as line tokens, position by position; false where the two
 * differ in wording.
 */
function alignPositions(t: string[], tSpans: boolean[], l: string[], draft: Draft): boolean {
  for (let p = 0; p < t.length; p++) {
    const a = t[p] ?? WILDCARD;
    const b = l[p] ?? WILDCARD;
    const span = tSpans[p] === true;
    if (span ? !fits(a, b) : !fits(a, b) && isWordDifference(a, b)) return false;
    draft.tokens.push(span || tokenMatches(a, b) ? a : generaliseToken(a, b));
    draft.spans.push(span);
  }
  return true;
}

/**
 * Adds a stretch where the template and the line may hold different numbers of tokens; false
 * unless each difference is one variable part, which becomes a spanning `<*>`: an existing span; a
 * key whose value runs over several words (`reason=connection reset by peer`, the stretch split at
 * its keys); a list in brackets; prose closing the line after a `label:`; or values with at most
 * one word beside them on each side (a unit, `2.6 KB (2697 bytes)` against `0 bytes`, `<1 sec`
 * against `01:08`, a program and its `*64`). Never where the two set different keys (`rhost=<*>`
 * against `rhost=<*> user=root`).
 */
function alignStretch(t: string[], tSpans: boolean[], l: string[], freeText: boolean, draft: Draft): boolean {
  if (t.length === l.length) {
    const mark = draft.tokens.length;
    if (alignPositions(t, tSpans, l, draft)) return true;
    // As many tokens in another shape (`<*> bytes (<*>)` / `<*> (<*> bytes)`): one value still.
    draft.tokens.length = mark;
    draft.spans.length = mark;
    if (t.length < 2) return false;
  }
  const head = t[0] ?? WILDCARD;
  const span = (token: string) => {
    draft.tokens.push(token);
    draft.spans.push(true);
    return true;
  };
  if (t.length === 1 && tSpans[0]) return fits(head, l[0] ?? '') && span(head);
  if (t.length === 0 || l.length === 0 || keysOf(t) !== keysOf(l)) return false;
  const tKeyAt = t.findIndex((token) => assignedKey(token) !== undefined);
  if (tKeyAt >= 0) {
    // Same keys in the same order: each key's value is compared with its own.
    const lKeyAt = l.findIndex((token) => assignedKey(token) !== undefined);
    if (tKeyAt > 0 || lKeyAt > 0) {
      if (!alignStretch(t.slice(0, tKeyAt), tSpans.slice(0, tKeyAt), l.slice(0, lKeyAt), freeText, draft)) return false;
      return alignStretch(t.slice(tKeyAt), tSpans.slice(tKeyAt), l.slice(lKeyAt), freeText, draft);
    }
    const tNext = t.findIndex((token, i) => i > 0 && assignedKey(token) !== undefined);
    const lNext = l.findIndex((token, i) => i > 0 && assignedKey(token) !== undefined);
    if (tNext > 0) {
      if (!alignStretch(t.slice(0, tNext), tSpans.slice(0, tNext), l.slice(0, lNext), false, draft)) return false;
      return alignStretch(t.slice(tNext), tSpans.slice(tNext), l.slice(lNext), freeText, draft);
    }
    const key = assignedKey(head) ?? '';
    return !hasWord(key.slice(0, -1)) ? false : span(`${key}${WILDCARD}`);
  }
  if (freeText && prose(t) && prose(l)) return span(WILDCARD);
  const opener = bracketed(l);
  const values = tSpans.some(Boolean) || t.some(isValue) || l.some(isValue);
  const words = plainWords(t, tSpans);
  const lWords = plainWords(l, []);
  // A word on one side only is a unit after its value (`<1 sec` / `01:08`), not a tag (`[preauth]`).
  const unitsOnly = words === lWords || (words === 0 ? unitAfterValue(l, []) : unitAfterValue(t, tSpans));
  if (opener !== undefined && bracketed(t) === opener) return span(WILDCARD);
  if (values && words <= 1 && lWords <= 1 && unitsOnly) {
    draft.lostWords += words;
    return span(WILDCARD);
  }
  return false;
}

/**
 * Aligns a line with a template of another length (or with spans) on their shared constant tokens
 * (a longest common subsequence), and gives the template covering both: each stretch between two
 * shared constants is kept position by position where both hold as many tokens, and becomes one
 * spanning `<*>` where they do not and the stretch reads as a variable part. Undefined when any
 * stretch says something else, or when fewer than SPAN_MIN_ANCHORS wordy constants are shared, so
 * unrelated lines never meet.
 */
function alignAcross(cluster: Cluster, line: string[]): SpanAlignment | undefined {
  const template = cluster.tokens;
  const spans = cluster.spans ?? [];
  const n = template.length;
  const m = line.length;
  const width = m + 1;
  const tAnchor = template.map((t, i) => !spans[i] && isAnchor(t));
  const lAnchor = line.map(isAnchor);
  const same = (i: number, j: number) => tAnchor[i] === true && lAnchor[j] === true && template[i] === line[j];
  // table[i][j]: the longest common run of constants of template[i..] and line[j..].
  const table = new Uint16Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      const here = i * width + j;
      table[here] = same(i, j)
        ? (table[here + width + 1] ?? 0) + 1
        : Math.max(table[here + width] ?? 0, table[here + 1] ?? 0);
    }
  }
  const anchors: [number, number][] = [];
  for (let i = 0, j = 0; i < n && j < m; ) {
    const here = i * width + j;
    if (same(i, j) && table[here] === (table[here + width + 1] ?? 0) + 1) anchors.push([i++, j++]);
    else if ((table[here + width] ?? 0) >= (table[here + 1] ?? 0)) i++;
    else j++;
  }
  // Prose after a worded label both lines share (`User reported: …`) is one span, though the two
  // may share words by chance. Not after a value (`from <*> (<*>): Permission denied`): there the
  // text is most often a fixed message, as an error's.
  for (let a = anchors.length - 1; a >= 0; a--) {
    const [i, j] = anchors[a] ?? [n, m];
    const label = template[i] ?? '';
    if (!label.endsWith(':') || !hasWord(label) || i >= n - 1 || j >= m - 1) continue;
    if (!prose(template.slice(i + 1)) || !prose(line.slice(j + 1))) continue;
    const aligned = judge(cluster, line, anchors.slice(0, a + 1), true);
    if (aligned) return aligned;
  }
  return judge(cluster, line, anchors, false);
}

function judge(cluster: Cluster, line: string[], shared: [number, number][], freeText: boolean): SpanAlignment | undefined {
  const template = cluster.tokens;
  const spans = cluster.spans ?? [];
  const anchors = [...shared];
  const gaps: Gap[] = [];
  for (let k = 0; k <= anchors.length; k++) {
    const [ti, li] = anchors[k - 1] ?? [-1, -1];
    const [tn, ln] = anchors[k] ?? [template.length, line.length];
    gaps.push({ t0: ti + 1, t1: tn, l0: li + 1, l1: ln });
  }
  // Tokens on one side only (`*64` after a program's name, `(1.16 KB)` after a size) belong to the
  // value beside them: the shared constant before them (after, at the start) joins the stretch.
  for (let k = 0; k < gaps.length; ) {
    const gap = gaps[k] as Gap;
    const tEmpty = gap.t0 === gap.t1;
    if (tEmpty === (gap.l0 === gap.l1)) {
      k++;
      continue;
    }
    const extra = tEmpty ? line.slice(gap.l0, gap.l1) : template.slice(gap.t0, gap.t1);
    const extraSpans = tEmpty ? [] : spans.slice(gap.t0, gap.t1);
    if (anchors.length === 0 || !extra.every((t, i) => extraSpans[i] === true || isValue(t))) {
      return undefined;
    }
    const a = k > 0 ? k - 1 : 0;
    const before = gaps[a] as Gap;
    const after = gaps[a + 1] as Gap;
    gaps.splice(a, 2, { t0: before.t0, t1: after.t1, l0: before.l0, l1: after.l1 });
    anchors.splice(a, 1);
    k = a;
  }
  const wordy = anchors.filter(([i]) => hasWord(template[i] ?? '')).length;
  if (wordy < SPAN_MIN_ANCHORS) return undefined;

  const draft: Draft = { tokens: [], spans: [], lostWords: 0 };
  for (let k = 0; k < gaps.length; k++) {
    const gap = gaps[k] as Gap;
    const t = template.slice(gap.t0, gap.t1);
    const tSpans = spans.slice(gap.t0, gap.t1);
    const l = line.slice(gap.l0, gap.l1);
    if (!alignStretch(t, tSpans, l, freeText && k === gaps.length - 1, draft)) return undefined;
    const anchor = anchors[k];
    if (anchor) {
      draft.tokens.push(template[anchor[0]] ?? WILDCARD);
      draft.spans.push(false);
    }
  }
  // The template may not lose more of its wording than the two lines share.
  if (draft.lostWords > wordy) return undefined;
  return { cluster, tokens: draft.tokens, spans: draft.spans, anchors: wordy };
}
