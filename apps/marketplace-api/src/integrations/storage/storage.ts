import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';

/**
 * Where uploaded files live. Keys starting with `public/` may be served to anyone (profile and
 * gallery photos); every other key (documents) is served only through a route that checks the caller.
 */
export interface Storage {
  put(key: string, data: Buffer): Promise<void>;
  /** A stream of the file, or undefined when there is none. */
  open(key: string): Promise<{ stream: Readable; size: number } | undefined>;
  remove(key: string): Promise<void>;
}

const KEY = /^[a-z0-9-]+(\/[a-zA-Z0-9._-]+)+$/;

/** A fresh key under a folder: `public/photos/2026/11/<uuid>.jpg`. */
export function newStorageKey(folder: string, extension: string): string {
  const now = new Date();
  const month = String(now.getUTCMonth() + 1).padStart(2, '0');
  return `${folder}/${now.getUTCFullYear()}/${month}/${randomUUID()}.${extension}`;
}

export function isPublicKey(key: string): boolean {
  return key.startsWith('public/') && KEY.test(key) && !key.includes('..');
}

/** Files on local disk under one directory (a temporary one when none is configured). */
export async function createLocalStorage(dir: string): Promise<Storage & { root: string; dispose(): Promise<void> }> {
  const temporary = !dir;
  const root = resolve(temporary ? await mkdtemp(join(tmpdir(), 'marketplace-uploads-')) : dir);
  await mkdir(root, { recursive: true });

  function pathOf(key: string): string {
    if (!KEY.test(key) || key.includes('..')) throw new Error(`Invalid storage key: ${key}`);
    const path = resolve(root, key);
    if (!path.startsWith(root + sep)) throw new Error(`Invalid storage key: ${key}`);
    return path;
  }

  return {
    root,
    async put(key, data) {
      const path = pathOf(key);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, data, { flag: 'wx' });
    },
    async open(key) {
      let path: string;
      try {
        path = pathOf(key);
      } catch {
        return undefined;
      }
      try {
        const info = await stat(path);
        if (!info.isFile()) return undefined;
        return { stream: createReadStream(path), size: info.size };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async remove(key) {
      await rm(pathOf(key), { force: true });
    },
    async dispose() {
      if (temporary) await rm(root, { recursive: true, force: true });
    },
  };
}
