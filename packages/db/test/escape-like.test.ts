import { describe, expect, it } from 'vitest';
import { escapeLike } from '../src/index.js';

describe('escapeLike', () => {
  it('escapes %, _ and the escape character itself', () => {
    expect(escapeLike('50%_off\\')).toBe('50\\%\\_off\\\\');
  });

  it('escapes every occurrence', () => {
    expect(escapeLike('%%__\\\\')).toBe('\\%\\%\\_\\_\\\\\\\\');
  });

  it('leaves ordinary text alone', () => {
    expect(escapeLike('Toyota Corolla (2019) – ÄÖÜ *?[]')).toBe('Toyota Corolla (2019) – ÄÖÜ *?[]');
    expect(escapeLike('')).toBe('');
  });

  it('escapes the backslash before the characters it precedes', () => {
    // "\%" in user text is a backslash then a percent sign: both must become literal.
    expect(escapeLike('\\%')).toBe('\\\\\\%');
  });
});
