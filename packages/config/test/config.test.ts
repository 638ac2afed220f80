import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildCommonConfig, commonEnvShape, ConfigError, isEntryPoint, parseEnv, resolveSecret } from '../src/index.js';

const schema = z.object({ ...commonEnvShape, PORT: z.coerce.number().int().default(8001) });

describe('parseEnv', () => {
  it('applies the defaults of an empty environment', () => {
    const parsed = parseEnv(schema, {});
    expect(parsed.RATE_LIMIT_AUTHENTICATED).toBe(60);
    expect(parsed.RATE_LIMIT_PUBLIC).toBe(30);
    expect(parsed.CORS_ORIGINS).toEqual(['http://localhost:3000', 'http://localhost:5173', 'http://localhost:5174']);
    expect(parsed.PORT).toBe(8001);
  });

  it('lists every bad variable in one message', () => {
    let error: unknown;
    try {
      parseEnv(schema, { PORT: 'abc', DATABASE_URL: 'mysql://x', RATE_LIMIT_PUBLIC: '-1' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('PORT');
    expect(message).toContain('DATABASE_URL');
    expect(message).toContain('RATE_LIMIT_PUBLIC');
  });

  it('splits comma-separated origins', () => {
    expect(parseEnv(schema, { CORS_ORIGINS: 'https://a.example, https://b.example' }).CORS_ORIGINS).toEqual([
      'https://a.example',
      'https://b.example',
    ]);
  });
});

describe('buildCommonConfig', () => {
  it('binds to loopback outside production and to every interface in production', () => {
    const dev = buildCommonConfig(parseEnv(schema, { DATA_DIR: 'memory://' }), { appName: 'x', port: 1 });
    expect(dev.host).toBe('127.0.0.1');
    const prod = buildCommonConfig(
      parseEnv(schema, { NODE_ENV: 'production', JWT_SECRET: 'a'.repeat(40), DATA_DIR: 'memory://' }),
      { appName: 'x', port: 1 },
    );
    expect(prod.host).toBe('0.0.0.0');
  });

  it('refuses to start in production without a JWT secret', () => {
    expect(() =>
      buildCommonConfig(parseEnv(schema, { NODE_ENV: 'production', DATA_DIR: 'memory://' }), { appName: 'x', port: 1 }),
    ).toThrow(/JWT_SECRET: required in production/);
  });

  it('hashes passwords at the standard cost unless told otherwise, and never at a lower one in production', () => {
    expect(buildCommonConfig(parseEnv(schema, { DATA_DIR: 'memory://' }), { appName: 'x', port: 1 }).auth.passwordHashCost).toBe('standard');
    const low = parseEnv(schema, { PASSWORD_HASH_COST: 'low', DATA_DIR: 'memory://' });
    expect(buildCommonConfig(low, { appName: 'x', port: 1 }).auth.passwordHashCost).toBe('low');
    expect(() =>
      buildCommonConfig(
        parseEnv(schema, { NODE_ENV: 'production', JWT_SECRET: 'a'.repeat(40), PASSWORD_HASH_COST: 'low', DATA_DIR: 'memory://' }),
        { appName: 'x', port: 1 },
      ),
    ).toThrow(/PASSWORD_HASH_COST: must be standard in production/);
  });

  it('requires REDIS_URL for the redis rate-limit store', () => {
    expect(() =>
      buildCommonConfig(parseEnv(schema, { RATE_LIMIT_STORE: 'redis', DATA_DIR: 'memory://' }), { appName: 'x', port: 1 }),
    ).toThrow(/REDIS_URL/);
  });

  it('shares the counters through Redis when configured, else through PostgreSQL, else keeps them in memory', () => {
    const store = (env: Record<string, string>) => buildCommonConfig(parseEnv(schema, { DATA_DIR: 'memory://', ...env }), { appName: 'x', port: 1 }).rateLimit.store;
    const pg = 'postgres://u@127.0.0.1:5432/db';
    expect(store({})).toBe('memory');
    expect(store({ DATABASE_URL: pg })).toBe('postgres');
    expect(store({ DATABASE_URL: pg, REDIS_URL: 'redis://127.0.0.1:6379' })).toBe('redis');
    expect(store({ DATABASE_URL: pg, RATE_LIMIT_STORE: 'memory' })).toBe('memory');
    expect(() => store({ RATE_LIMIT_STORE: 'postgres' })).toThrow(/DATABASE_URL: required when RATE_LIMIT_STORE=postgres/);
  });
});

describe('resolveSecret', () => {
  it('generates a secret once and keeps it in the data directory', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cfg-'));
    const first = resolveSecret({ name: 'JWT_SECRET', dataDir, production: false });
    const second = resolveSecret({ name: 'JWT_SECRET', dataDir, production: false });
    expect(first).toHaveLength(43);
    expect(second).toBe(first);
    expect(JSON.parse(readFileSync(join(dataDir, 'secrets.json'), 'utf8'))).toEqual({ JWT_SECRET: first });
  });

  it('prefers the configured value', () => {
    expect(resolveSecret({ name: 'S', value: 'given', dataDir: 'memory://', production: true })).toBe('given');
  });
});

describe('isEntryPoint', () => {
  const dir = mkdtempSync(join(tmpdir(), 'entry-'));
  const script = join(dir, 'cli.js');
  writeFileSync(script, '');
  const link = join(dir, 'linked.js');
  symlinkSync(script, link);
  const url = pathToFileURL(script).href;

  it('is true for the script node was started with, through a link too', () => {
    expect(isEntryPoint(url, ['node', script])).toBe(true);
    expect(isEntryPoint(url, ['node', link])).toBe(true);
  });

  it('is false when another script was started, none was, or the path does not exist', () => {
    expect(isEntryPoint(url, ['node'])).toBe(false);
    expect(isEntryPoint(url, ['node', join(dir, 'missing.js')])).toBe(false);
    expect(isEntryPoint(pathToFileURL(join(dir, 'other.js')).href, ['node', script])).toBe(false);
  });
});
