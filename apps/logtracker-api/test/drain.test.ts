import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_DRAIN_OPTIONS,
  type MinerState,
  TemplateMiner,
  WILDCARD,
  createMasker,
  mask,
  tokenize,
} from '../src/modules/patterns/drain.js';
import { evaluateSample, groupingAccuracy, parseCsv } from '../src/modules/patterns/evaluation.js';

describe('CSV parser and GA helpers', () => {
  it('handles quotes, doubled quotes, embedded commas, line breaks and CRLF', () => {
    const text = 'a,b,c\r\n1,"x, y","say ""hi"""\n2,"two\nlines",\n';
    expect(parseCsv(text)).toEqual([
      ['a', 'b', 'c'],
      ['1', 'x, y', 'say "hi"'],
      ['2', 'two\nlines', ''],
    ]);
  });

  it('counts a group only when it is predicted exactly', () => {
    expect(groupingAccuracy([1, 1, 2, 3], ['a', 'a', 'b', 'b'])).toBe(0.5);
    expect(groupingAccuracy([1, 1, 1, 2], ['a', 'a', 'b', 'c'])).toBe(0.25);
    expect(groupingAccuracy([7, 7, 9], ['a', 'a', 'b'])).toBe(1);
  });
});

describe('masking', () => {
  const cases: [kind: string, input: string, expected: string][] = [
    ['integer', 'retry 3 of 10', 'retry <*> of <*>'],
    ['signed and decimal', 'delta -26 ratio 0.6854 gain +3', 'delta <*> ratio <*> gain <*>'],
    ['sizes and durations', 'took 3ms, read 12KB, free 5.8 KB, 42% done', 'took <*>, read <*>, free <*>, <*> done'],
    ['hex', 'session 0x14f05578bd80002 at 00000000ffb00000', 'session <*> at <*>'],
    ['uuid', 'request 123e4567-e89b-12d3-a456-426614174000 done', 'request <*> done'],
    ['ipv4 with port', 'from 10.10.34.11:45307 to 173.234.31.186', 'from <*> to <*>'],
    ['ipv6', 'peer [2001:db8::1]:443 via fe80::1ff:fe23:4567:890a and ::1', 'peer <*> via <*> and <*>'],
    ['host with port', 'connect to msra-sa-41:8030 or db.internal:5432', 'connect to <*> or <*>'],
    ['iso timestamp', 'at 2015-10-18T18:01:47.978Z', 'at <*>'],
    ['syslog / ctime timestamp', 'at Wed Jun 29 10:48:01 2005 ok', 'at <*> ok'],
    ['date and time', 'on 17/06/09 at 20:10:40,123', 'on <*> at <*>'],
    ['email', 'mail alice.smith+tag@example.co.uk', 'mail <*>'],
    ['url', 'GET https://api.example.com/v1/users?id=5. next', 'GET <*>. next'],
    ['unix and windows paths', 'open /var/log/app.log: and C:\\Users\\bob\\a.txt', 'open <*>: and <*>'],
    ['mac address', 'nic 00:1A:2B:3C:4D:5E up', 'nic <*> up'],
  ];
  it.each(cases)('masks %s', (_kind, input, expected) => {
    expect(mask(input)).toBe(expected);
  });

  it('leaves words, versions glued to names and `::` scopes alone', () => {
    expect(mask('Failed password for root port ssh2 from std::vector deadbeef')).toBe(
      'Failed password for root port ssh2 from std::vector deadbeef',
    );
  });

  it('masks identifier pieces of tokens and keeps keys', () => {
    expect(tokenize('Found block rdd_42_7 for job_1445144423722_0020 uid=0 LOGIN(uid=0) CPU#1')).toEqual([
      'Found',
      'block',
      WILDCARD,
      'for',
      WILDCARD,
      'uid=<*>',
      'LOGIN(uid=<*>)',
      'CPU#<*>',
    ]);
  });

  it('applies custom rules and can switch identifier masking off', () => {
    const masker = createMasker({ maskRules: [{ name: 'ticket', pattern: 'TICKET-\\d+' }], maskIdTokens: false });
    expect(masker.tokenize('closed TICKET-981 by rdd_42_7 after 3 tries')).toEqual([
      'closed',
      WILDCARD,
      'by',
      'rdd_42_7',
      'after',
      '3',
      'tries',
    ]);
  });
});

describe('TemplateMiner', () => {
  it('turns the positions where lines differ into <*>', () => {
    const miner = new TemplateMiner();
    const first = miner.add('Failed password for root from 10.0.0.1 port 22 ssh2');
    expect(first).toEqual({ clusterId: 1, template: 'Failed password for root from <*> port <*> ssh2', changed: true });
    const same = miner.add('Failed password for root from 10.0.0.2 port 2222 ssh2');
    expect(same).toEqual({ clusterId: 1, template: first.template, changed: false });
    miner.add('Failed password for admin from 10.0.0.3 port 22 ssh2');
    miner.add('Failed password for oracle from 10.0.0.4 port 22 ssh2');
    const fourth = miner.add('Failed password for guest from 10.0.0.5 port 22 ssh2');
    expect(fourth.template).toBe('Failed password for <*> from <*> port <*> ssh2');
    expect(fourth.changed).toBe(true);
    expect(miner.clusters()).toEqual([{ id: 1, template: fourth.template, size: 5 }]);
  });

  it('keeps the constant part of a token', () => {
    const miner = new TemplateMiner();
    miner.add('authentication failure; logname= uid=0 tty=ssh rhost=10.1.1.1');
    const { template } = miner.add('authentication failure; logname= uid=0 tty=ssh rhost=box.example.org');
    expect(template).toBe('authentication failure; logname= uid=<*> tty=ssh rhost=<*>');
  });

  it('keeps lines that differ in one word apart until more variants show up', () => {
    const miner = new TemplateMiner();
    const bytes = miner.add('Block rdd_1_2 stored as bytes in memory (estimated size 5.8 KB, free 409.0 KB)');
    const values = miner.add('Block rdd_3_4 stored as values in memory (estimated size 955.0 B, free 820.8 KB)');
    expect(values.clusterId).not.toBe(bytes.clusterId);
    expect(miner.add('Block rdd_5_6 stored as bytes in memory (estimated size 1 KB, free 2 KB)').clusterId).toBe(
      bytes.clusterId,
    );

    const alice = miner.add('session closed for user alice');
    const bob = miner.add('session closed for user bob');
    expect(bob.clusterId).not.toBe(alice.clusterId);
    const carol = miner.add('session closed for user carol');
    expect(carol.clusterId).not.toBe(alice.clusterId);
    const dave = miner.add('session closed for user dave');
    expect(dave).toMatchObject({ clusterId: alice.clusterId, template: 'session closed for user <*>', changed: true });
    expect(miner.resolve(bob.clusterId)).toBe(alice.clusterId);
    expect(miner.resolve(carol.clusterId)).toBe(alice.clusterId);
    expect(miner.clusters().find((c) => c.id === alice.clusterId)?.size).toBe(4);
  });

  it('reads a word with a version digit, or a named constant, as a word: HTTPS and SOCKS5 are two events', () => {
    const miner = new TemplateMiner();
    const https = miner.add('www.example.org:443 open through proxy proxy.example.net:5070 HTTPS');
    miner.add('mail.example.org:993 open through proxy proxy.example.net:5070 HTTPS');
    const socks = miner.add('cdn.example.org:80 open through proxy proxy.example.net:5070 SOCKS5');
    expect(socks.clusterId).not.toBe(https.clusterId);
    expect(miner.template(https.clusterId)).toBe('<*> open through proxy <*> HTTPS');
    // So does a qualified name ending in a constant, while other qualified names are values.
    const on = miner.add('onReceive action: android.intent.action.SCREEN_ON');
    expect(miner.add('onReceive action: android.intent.action.SCREEN_OFF').clusterId).not.toBe(on.clusterId);
    const main = miner.add('Registering class com.example.app.Main for the job');
    expect(miner.add('Registering class com.example.app.Worker for the job').clusterId).toBe(main.clusterId);
    // One name numbered differently is one thing's instances: a value at once.
    const eth0 = miner.add('link up on eth0');
    expect(miner.add('link up on eth1')).toMatchObject({ clusterId: eth0.clusterId, template: 'link up on <*>' });
    // A quote opening with a verb in capitals says what happened; other quoted text is a value.
    const get = miner.add('10.0.0.1 "GET /v2/servers/detail HTTP/1.1" status: 200 len: 1893');
    expect(miner.add('10.0.0.1 "GET /v2/servers/4f2a HTTP/1.1" status: 200 len: 1701').clusterId).toBe(get.clusterId);
    expect(miner.add('10.0.0.1 "DELETE /v2/servers/4f2a HTTP/1.1" status: 204 len: 203').clusterId).not.toBe(get.clusterId);
  });

  it('generalises at the first difference with minWordVariants 1, like the original Drain', () => {
    const miner = new TemplateMiner({ minWordVariants: 1 });
    miner.add('stored as bytes in memory');
    expect(miner.add('stored as values in memory').template).toBe('stored as <*> in memory');
  });

  it('reads the values of one key as values, and plain-word values as wording', () => {
    const miner = new TemplateMiner();
    const lock = miner.add('acquire lock=1, flags=0x1, tag="View Lock", name=com.android.systemui, ws=null, uid=1000, pid=2');
    const other = miner.add('acquire lock=7, flags=0x5, tag="*launch*", name=android, ws=WorkSource{10113}, uid=1000, pid=3');
    expect(other.clusterId).toBe(lock.clusterId);
    expect(other.template).toBe('acquire lock=<*>, flags=<*>, tag="<*>", name=<*>, ws=<*>, uid=<*>, pid=<*>');

    const expand = miner.add('flingToHeight: vel=1.5, expand=true, target=3.2');
    const collapse = miner.add('flingToHeight: vel=2.5, expand=false, target=1.0');
    expect(collapse.clusterId).not.toBe(expand.clusterId);
  });

  it('keeps one-token lines of different keys apart however many there are', () => {
    const miner = new TemplateMiner();
    const lines = ['ready=true,policy=3,mode=false', 'cancelNotification,index:0', 'removeNotification:0|com.app|7', 'isBluetoothA2dpOn...'];
    const ids = lines.map((line) => miner.add(line).clusterId);
    expect(new Set(ids).size).toBe(4);
    expect(miner.add('ready=true,policy=1,mode=false').clusterId).toBe(ids[0]);
    expect(miner.add('cancelNotification,index:12').clusterId).toBe(ids[1]);
    expect(miner.clusters().every((c) => c.template !== WILDCARD)).toBe(true);
  });

  it('takes quoted text as one token and qualified names as values, named constants as words', () => {
    const miner = new TemplateMiner();
    const quoted = miner.add('search for "disk full" returned no results');
    expect(miner.add('search for "timeout" returned no results').clusterId).toBe(quoted.clusterId);
    const tick = miner.add('received broadcast android.intent.action.TIME_TICK');
    // Constants at the end of a qualified name are words: distinct events until a fourth one shows up.
    expect(miner.add('received broadcast android.intent.action.BATTERY_CHANGED').clusterId).not.toBe(tick.clusterId);
    miner.add('received broadcast android.intent.action.SCREEN_ON');
    const screen = miner.add('received broadcast android.intent.action.SCREEN_OFF');
    expect(screen).toMatchObject({ clusterId: tick.clusterId, template: 'received broadcast <*>' });
    const task = miner.add('getRecentTasks: topActivity=ComponentInfo{com.tencent.mm/com.tencent.mm.ui.LauncherUI}');
    const notes = miner.add('getRecentTasks: topActivity=ComponentInfo{com.example.notepad/com.example.notepad.NoteEditor}');
    expect(notes.clusterId).toBe(task.clusterId);
  });

  it('separates lines of different lengths and different leading keywords', () => {
    const miner = new TemplateMiner();
    const ids = new Set(
      ['cupsd startup succeeded', 'cupsd shutdown succeeded', 'PCI: Probing PCI hardware', 'PCI: Probing PCI hardware (bus 00)'].map(
        (line) => miner.add(line).clusterId,
      ),
    );
    expect(ids.size).toBe(4);
  });

  it('assigns ids once and keeps them stable', () => {
    const miner = new TemplateMiner();
    const lines = ['Got assigned task 1', 'Running task 1.0 in stage 2.0 (TID 7)', 'Got assigned task 2', 'Connection reset by peer'];
    const ids = lines.map((line) => miner.add(line).clusterId);
    expect(ids).toEqual([1, 2, 1, 3]);
    for (let i = 0; i < 50; i++) miner.add(`Got assigned task ${i}`);
    expect(lines.map((line) => miner.add(line).clusterId)).toEqual(ids);
    expect(miner.clusters().map((c) => c.id)).toEqual([1, 2, 3]);
  });

  it('match() finds the cluster without learning or creating anything', () => {
    const miner = new TemplateMiner();
    miner.add('Got assigned task 1');
    const before = JSON.stringify(miner.toJSON());
    expect(miner.match('Got assigned task 99')).toEqual({ clusterId: 1, template: 'Got assigned task <*>' });
    expect(miner.match('Trying to register BlockManager')).toBeUndefined();
    expect(miner.match('Got assigned')).toBeUndefined();
    expect(JSON.stringify(miner.toJSON())).toBe(before);
    expect(miner.clusters()).toHaveLength(1);
  });

  it('restores from JSON with the same matches, ids and later behaviour', () => {
    const lines = [
      'Failed password for root from 10.0.0.1 port 22 ssh2',
      'Failed password for admin from 10.0.0.2 port 22 ssh2',
      'session closed for user alice',
      'session closed for user bob',
      'session closed for user carol',
      'Received disconnect from 1.2.3.4: 11: Bye Bye [preauth]',
      'Block broadcast_1 stored as values in memory (estimated size 9.8 KB, free 369.3 KB)',
    ];
    const original = new TemplateMiner({ similarityThreshold: 0.7 });
    const added = lines.map((line) => original.add(line));
    const restored = TemplateMiner.fromJSON(JSON.parse(JSON.stringify(original)) as MinerState);

    expect(restored.options.similarityThreshold).toBe(0.7);
    expect(restored.clusters()).toEqual(original.clusters());
    for (const line of lines) expect(restored.match(line)).toEqual(original.match(line));
    for (const { clusterId } of added) expect(restored.resolve(clusterId)).toBe(original.resolve(clusterId));

    const more = ['Failed password for oracle from 10.0.0.3 port 22 ssh2', 'Starting remoting', 'session closed for user dave'];
    expect(more.map((line) => restored.add(line))).toEqual(more.map((line) => original.add(line)));
    expect(restored.toJSON()).toEqual(original.toJSON());
  });

  it('rejects a state of another version and invalid options', () => {
    const state = { ...new TemplateMiner().toJSON(), version: 2 } as unknown as MinerState;
    expect(() => TemplateMiner.fromJSON(state)).toThrow(/version/);
    expect(() => new TemplateMiner({ similarityThreshold: 1.5 })).toThrow(RangeError);
    expect(() => new TemplateMiner({ depth: 2 })).toThrow(RangeError);
    expect(() => new TemplateMiner({ maxChildren: 1.5 })).toThrow(RangeError);
  });

  it('keeps leaves bounded: an overflowing leaf drops its least recently matched cluster', () => {
    // Two children per node: `alpha` gets its own, the other words share the wildcard leaf.
    const miner = new TemplateMiner({ maxClustersPerLeaf: 2, maxChildren: 2, minWordVariants: 10 });
    const ids = ['alpha', 'beta', 'gamma', 'delta'].map((word) => miner.add(`${word} event has happened`).clusterId);
    expect(ids).toEqual([1, 2, 3, 4]);
    expect(miner.clusters()).toHaveLength(4);
    expect(miner.match('beta event has happened')).toBeUndefined();
    expect(miner.match('gamma event has happened')?.clusterId).toBe(3);
    expect(miner.match('alpha event has happened')?.clusterId).toBe(1);
  });
});

describe('variable parts spanning a varying number of tokens', () => {
  const proxy = [
    'chrome.exe - proxy.cse.cuhk.edu.hk:5070 close, 0 bytes sent, 0 bytes received, lifetime <1 sec',
    'chrome.exe *64 - qa.sockets.stackexchange.com:443 close, 403 bytes sent, 2.6 KB (2697 bytes) received, lifetime 01:08',
    'chrome.exe - www.google.com:443 close, 1190 bytes (1.16 KB) sent, 13.9 KB (14250 bytes) received, lifetime 00:02',
  ];

  it('joins lines of different lengths into one readable template', () => {
    const miner = new TemplateMiner();
    const ids = proxy.map((line) => miner.add(line).clusterId);
    expect(new Set(ids).size).toBe(1);
    expect(miner.clusters()).toEqual([{ id: 1, template: '<*> - <*> close, <*> sent, <*> received, lifetime <*>', size: 3 }]);
    expect(miner.add('Dropbox.exe - client-lb.dropbox.com:443 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS').clusterId).toBe(2);
    expect(miner.add('chrome.exe *64 - www.google.com:443 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS')).toEqual({
      clusterId: 2,
      template: '<*> - <*> open through proxy <*> HTTPS',
      changed: true,
    });
  });

  it('keeps a repeated group of masked tokens once, so a list of any length is one variable', () => {
    expect(tokenize('ask 10.0.0.1:50010 to delete blk_-857078 blk_912255 blk_-439306 blk_876756')).toEqual(['ask', '<*>', 'to', 'delete', 'blk_-<*>', '<*>']);
    expect(tokenize('nodesets node-1 0x01fc <ok> node-2 0x01fc <ok> node-7 0x03fd <ok>')).toEqual(['nodesets', 'node-<*>', '<*>', '<ok>']);
    expect(tokenize('fan speeds ( 3552 3534 3375 3515 )')).toEqual(['fan', 'speeds', '(', '<*>', ')']);
    // Words are never collapsed, nor a masked token that does not repeat right after itself.
    expect(tokenize('yes yes no')).toEqual(['yes', 'yes', 'no']);
    expect(tokenize('from 1 to 2 at 3')).toEqual(['from', '<*>', 'to', '<*>', 'at', '<*>']);

    const miner = new TemplateMiner();
    const one = miner.add('ask 10.250.18.114:50010 to delete blk_-5140072410813878235');
    const many = miner.add('ask 10.250.17.177:50010 to delete blk_-8570780307468499817 blk_-9122557405432088649 blk_-4393063808227796056');
    expect(many.clusterId).toBe(one.clusterId);
  });

  it('takes lists, prose after a label and a key’s value of several words as one variable', () => {
    const miner = new TemplateMiner();
    const lists = ['Sent notification to [alice, bob]', 'Sent notification to [carol]', 'Sent notification to [dave, erin, frank]'];
    expect(lists.map((line) => miner.add(line).template)).toEqual([lists[0], 'Sent notification to <*>', 'Sent notification to <*>']);
    miner.add('User reported: the app crashes on start');
    expect(miner.add('User reported: slow').template).toBe('User reported: <*>');
    miner.add('request failed reason=timeout status=504');
    expect(miner.add('request failed reason=connection reset by peer status=502').template).toBe(
      'request failed reason=<*> status=<*>',
    );
    expect(miner.clusters().map((c) => c.size)).toEqual([3, 2, 2]);
  });

  it('keeps optional parts, other keys, tags and fixed messages apart', () => {
    const pairs: [string, string][] = [
      ['PCI: Probing PCI hardware', 'PCI: Probing PCI hardware (bus 00)'],
      ['Connection closed by 10.0.0.1 port 22', 'Connection closed by 10.0.0.2 port 22 [preauth]'],
      [
        'authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=10.0.0.1',
        'authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=10.0.0.2  user=root',
      ],
      ['session opened for user root by (uid=0)', 'session closed for user root'],
      ['Authentication failed from 10.0.0.1 (10.0.0.1): Permission denied in replay cache code', 'Authentication failed from 10.0.0.1 (10.0.0.1): Software caused connection abort'],
      ['Processing the event EventType: JOB_SETUP', 'Processing the event EventType: CONTAINER_REMOTE_LAUNCH for container container_1445144423722_0020_01_000002'],
    ];
    for (const [a, b] of pairs) {
      const miner = new TemplateMiner();
      expect(miner.add(a).clusterId, a).not.toBe(miner.add(b).clusterId);
      expect(miner.toJSON().clusters.filter((c) => c.spans), a).toEqual([]);
    }
  });

  it('finds the template across lengths in match() without learning, and keeps it through JSON', () => {
    const miner = new TemplateMiner();
    for (const line of proxy.slice(0, 2)) miner.add(line);
    const before = JSON.stringify(miner.toJSON());
    // The template as it stands; add() would widen `<*> bytes sent,` to `<*> sent,`.
    expect(miner.match(proxy[2] ?? '')).toEqual({
      clusterId: 1,
      template: '<*> - <*> close, <*> bytes sent, <*> received, lifetime <*>',
    });
    expect(JSON.stringify(miner.toJSON())).toBe(before);

    const state = JSON.parse(before) as MinerState;
    expect(state.clusters[0]?.spans?.length).toBeGreaterThan(0);
    const restored = TemplateMiner.fromJSON(state);
    const more = [proxy[2] ?? '', 'firefox.exe - 10.0.0.1:8080 close, 512 B sent, 1.2 MB (1258291 bytes) received, lifetime 02:10:31'];
    expect(more.map((line) => restored.add(line))).toEqual(more.map((line) => miner.add(line)));
    expect(restored.toJSON()).toEqual(miner.toJSON());
  });

  it('loads a state written before templates had spans', () => {
    const state: MinerState = {
      version: 1,
      options: { ...DEFAULT_DRAIN_OPTIONS, maskRules: DEFAULT_DRAIN_OPTIONS.maskRules.map((r) => ({ ...r })) },
      nextId: 2,
      clusters: [{ id: 1, tokens: ['Sent', 'notification', 'to', '[carol]'], size: 1 }],
      aliases: [],
      tree: [[4, { children: [['Sent', { children: [['notification', { children: [], clusters: [1] }]], clusters: [] }]], clusters: [] }]],
    };
    const miner = TemplateMiner.fromJSON(state);
    expect(miner.match('Sent notification to [carol]')?.clusterId).toBe(1);
    expect(miner.add('Sent notification to [alice, bob]')).toEqual({ clusterId: 1, template: 'Sent notification to <*>', changed: true });
    expect(miner.add('Sent notification to [dave]').clusterId).toBe(1);
  });
});

describe('grouping accuracy on a labelled sample the project owns', () => {
  it('groups every line of test/fixtures/labelled-sample.csv with its template', () => {
    const csv = readFileSync(new URL('./fixtures/labelled-sample.csv', import.meta.url), 'utf8');
    const result = evaluateSample('fixture', csv);
    expect(result.lines).toBe(80);
    expect(result.accuracy).toBe(1);
  });

  it('keeps each event of test/fixtures/varying-spans.csv in one pattern whatever the length of its variables', () => {
    // Proxy connection logs, lists, prose, durations and sizes written in several shapes, host:port
    // with and without an address, key values of several words, beside look-alikes that are
    // distinct events (an optional tag, another key, an optional suffix).
    const csv = readFileSync(new URL('./fixtures/varying-spans.csv', import.meta.url), 'utf8');
    const result = evaluateSample('varying-spans', csv);
    expect(result.lines).toBe(106);
    expect(result.accuracy).toBeGreaterThanOrEqual(0.95);
  });
});

describe('speed', () => {
  it('mines 100 000 varied lines in under 5 seconds', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    const int = (n: number) => Math.floor(random() * n);
    const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
    const hex = (n: number) => Array.from({ length: n }, () => '0123456789abcdef'[int(16)]).join('');
    const uuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`;
    const ip = () => `${int(256)}.${int(256)}.${int(256)}.${int(256)}`;
    const users = Array.from({ length: 300 }, (_, i) => `user${String.fromCharCode(97 + (i % 26), 97 + ((i / 26) | 0))}`);
    const words = ['alpha', 'beta', 'gamma', 'delta', 'omega', 'kappa', 'sigma', 'theta', 'lambda', 'zeta'];
    const shapes: (() => string)[] = [
      () => `GET /api/v1/projects/${int(1e5)}/logs?limit=${int(100)} ${pick([200, 404, 500])} ${int(900)}ms`,
      () => `User ${pick(users)}@example.com logged in from ${ip()}:${int(65_535)}`,
      () => `Connection to db-${int(9)}.internal:5432 timed out after ${int(30_000)} ms`,
      () => `request ${uuid()} completed in ${(random() * 10).toFixed(3)}s status=${pick(['ok', 'fail'])}`,
      () => `Worker ${int(64)} processed batch ${hex(12)} with ${int(10_000)} items`,
      () => `Cache miss for key session:${hex(16)} (ttl=${int(3600)})`,
      () => `[${new Date(1.7e12 + int(1e10)).toISOString()}] job ${pick(words)}-${int(1000)} finished: exit code ${int(3)}`,
      () => `Failed to open file /var/data/${pick(words)}/${hex(8)}.json: ENOENT`,
      () => `Retrying upload to https://s3.example.com/bucket/${hex(10)} attempt ${int(5)} of 5`,
      () => `Memory usage ${int(4096)}MB of 8192MB, gc pause ${int(200)}ms`,
      () => `Scheduled task ${pick(words)} for ${pick(users)} at ${int(24)}:${int(60)}:${int(60)}`,
      () => `Payment ${int(1e9)} declined for customer ${pick(users)}: ${pick(['insufficient funds', 'card expired'])}`,
      () => `Exception in thread "pool-${int(9)}-thread-${int(99)}" java.lang.NullPointerException at Service.java:${int(500)}`,
      () => `IPv6 client [2001:db8::${hex(4)}]:${int(65_535)} connected`,
      () => `${pick(words)} ${pick(words)} ${pick(words)} ${int(100)} ${pick(users)}`,
      () => `free-text note number ${int(1e6)}: ${Array.from({ length: 1 + int(6) }, () => pick(words)).join(' ')}`,
    ];
    const lines = Array.from({ length: 100_000 }, () => pick(shapes)());

    const miner = new TemplateMiner(DEFAULT_DRAIN_OPTIONS);
    const started = performance.now();
    for (const line of lines) miner.add(line);
    const elapsed = performance.now() - started;
    // eslint-disable-next-line no-console
    console.log(`100 000 lines in ${elapsed.toFixed(0)} ms, ${miner.clusters().length} clusters`);

    expect(elapsed).toBeLessThan(5000);
    expect(miner.clusters().length).toBeLessThan(2000);
    expect(miner.match('User bob@example.com logged in from 10.0.0.1:443')?.template).toBe('User <*> logged in from <*>');
  });
});
