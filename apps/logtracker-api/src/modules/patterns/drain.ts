/**
 * Online log template miner after Drain (He et al., "Drain: An Online Log Parsing Approach with
 * Fixed Depth Tree", ICWS 2017), written for this project. Pure and synchronous: no I/O, and the
 * whole state is plain data (toJSON/fromJSON) so a project's miner can be stored and resumed.
 *
 * Beyond the paper: variables are masked before the tree, templates keep the constant part of a
 * token (`uid=<*>`), differing plain words only become `<*>` once several have been seen, and
 * clusters that turn out to differ only at variable positions are merged.
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
  minWordVariants: 3,
  mergeClusters: true,
});

// ---------------------------------------------------------------------------------------------
// Masking and tokens

export interface Masker {
  /** The message with every variable replaced by `<*>`. */
  mask(message: string): string;
  /** The masked message split on whitespace: what the tree and the templates work on. */
  tokenize(message: string): string[];
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

export function createMasker(options: Pick<DrainOptions, 'maskRules' | 'maskIdTokens'>): Masker {
  // One alternation, one pass: a later rule never sees the `<*>` an earlier one produced, and at
  // each position the first rule in the list wins.
  const alternation = options.maskRules.map((r) => `(?:${r.pattern})`).join('|');
  // Every default rule starts at a word's start: said once in front, the check rejects a position
  // inside a word before any rule is tried (a third of the masking time), matching the same text.
  const wordStart = options.maskRules.every((r) => DEFAULT_PATTERNS.has(r.pattern));
  const combined =
    options.maskRules.length > 0
      ? new RegExp(wordStart ? `(?<![A-Za-z0-9_])(?:${alternation})` : alternation, 'g')
      : undefined;
  const mask = (message: string) => (combined ? message.replace(combined, WILDCARD) : message);
  return {
    mask,
    tokenize(message) {
      // Quoted text is one token however many words it holds (`tag="View Lock"`), so a line's
      // length does not depend on what a variable says.
      const tokens = mask(message).match(TOKEN) ?? [];
      return options.maskIdTokens ? tokens.map(maskIdPieces) : tokens;
    },
  };
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
/** Quoted text (`"disk full"`, `"timeout",`): free text, whatever it says. */
const QUOTED = /^"[^"]*"[,;:.)]*$/;
const looksVariable = memo(
  (token) =>
    token === WILDCARD || hasDigit(token) || GLUED_MASK.test(token) || QUALIFIED_NAME.test(token) || QUOTED.test(token),
);

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
  if (looksVariable(templateToken) || looksVariable(token)) return false;
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
}

type Decision =
  | { kind: 'join'; cluster: Cluster }
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
  clusters: { id: number; tokens: string[]; size: number }[];
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
  private nextId = 1;

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
    const tokens = this.masker.tokenize(message);
    const leaf = this.leafFor(tokens, true);
    const decision = this.decide(leaf, tokens);
    let cluster: Cluster;
    let changed = true;
    if (decision.kind === 'new') {
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
      changed = generaliseInto(cluster, tokens);
    }
    cluster.size++;
    touch(leaf, cluster.id);
    if (changed && this.options.mergeClusters) cluster = this.mergeEquivalents(leaf, cluster);
    return { clusterId: cluster.id, template: cluster.tokens.join(' '), changed };
  }

  /** The cluster `add` would put the line in, learning nothing; undefined where it would start one. */
  match(message: string): MatchResult | undefined {
    const tokens = this.masker.tokenize(message);
    const leaf = this.leafFor(tokens, false);
    const decision = leaf && this.decide(leaf, tokens);
    if (decision?.kind !== 'join') return undefined;
    return { clusterId: decision.cluster.id, template: decision.cluster.tokens.join(' ') };
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
      clusters: [...this.byId.values()].map((c) => ({ id: c.id, tokens: [...c.tokens], size: c.size })),
      aliases: [...this.aliases],
      tree: [...this.root].map(([length, node]) => [length, serialize(node)]),
    };
  }

  static fromJSON(state: MinerState): TemplateMiner {
    if (state.version !== 1) throw new Error(`Unsupported miner state version ${String(state.version)}`);
    const miner = new TemplateMiner(state.options);
    miner.nextId = state.nextId;
    for (const c of state.clusters) miner.byId.set(c.id, { id: c.id, tokens: [...c.tokens], size: c.size });
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
      const cluster = this.byId.get(id);
      const candidate = cluster && score(cluster, tokens, allowed);
      if (candidate) candidates.push(candidate);
    }
    const best = pickBest(candidates.filter((c) => c.wordDiffs.length === 0)) ?? pickBest(candidates);
    if (!best) return { kind: 'new' };
    if (best.wordDiffs.length === 0 || this.options.minWordVariants <= 1) return { kind: 'join', cluster: best.cluster };
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
      if (!other || !mergeable(survivor.tokens, other.tokens)) continue;
      const [keep, drop] = other.id < survivor.id ? [other, survivor] : [survivor, other];
      this.absorb(leaf, keep, drop);
      survivor = keep;
    }
    return survivor;
  }
}

/** Moves a cluster to the most recently matched end of its leaf. */
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
