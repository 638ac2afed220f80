/**
 * Percent-encodes a string for a URL. Unlike `encodeURIComponent`, which throws on a lone
 * surrogate, a lone surrogate is written as the three bytes a careless encoder would produce
 * (`\ud800` → `%ED%A0%80`): invalid UTF-8 the server must refuse, not crash on.
 */
export function encodeUrlText(value: string): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        out += encodeURIComponent(value.slice(i, i + 2));
        i += 1;
        continue;
      }
    }
    if (unit >= 0xd800 && unit <= 0xdfff) {
      const bytes = [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)];
      out += bytes.map((b) => `%${b.toString(16).toUpperCase()}`).join('');
      continue;
    }
    out += encodeURIComponent(value.charAt(i));
  }
  return out;
}

/** Decodes URL text as far as it decodes; the raw text where it does not. */
export function decodeUrlText(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/**
 * Whether a path value could name an existing row: some reading of it (`Number`, `parseInt`,
 * `parseFloat`) is a positive 32-bit integer. State-changing requests never send such a value
 * unless it is a fixture made for them, so hostile input cannot delete or change shared data.
 */
export function couldNameARow(raw: string): boolean {
  const text = decodeUrlText(raw);
  return [Number(text), Number(text.trim()), Number.parseInt(text, 10), Number.parseFloat(text)].some(
    (n) => Number.isInteger(n) && n >= 1 && n < 2 ** 31,
  );
}
