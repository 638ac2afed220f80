import { describe, expect, it } from 'vitest';
import { pageMeta, pageOffset } from '../src/index.js';

describe('pageMeta', () => {
  it('names the page, its size, the total and the last page', () => {
    expect(pageMeta(2, 20, 45)).toEqual({ current_page: 2, per_page: 20, total: 45, last_page: 3 });
  });

  it('has an exact last page when the total divides evenly', () => {
    expect(pageMeta(1, 25, 100).last_page).toBe(4);
    expect(pageMeta(1, 25, 101).last_page).toBe(5);
    expect(pageMeta(1, 1, 1).last_page).toBe(1);
  });

  it('answers last_page 1 for an empty list', () => {
    expect(pageMeta(1, 15, 0)).toEqual({ current_page: 1, per_page: 15, total: 0, last_page: 1 });
  });

  it('keeps the requested page even past the last one', () => {
    expect(pageMeta(9, 10, 5)).toEqual({ current_page: 9, per_page: 10, total: 5, last_page: 1 });
  });
});

describe('pageOffset', () => {
  it('starts the first page at row 0', () => {
    expect(pageOffset(1, 20)).toBe(0);
  });

  it('skips the rows of the earlier pages', () => {
    expect(pageOffset(2, 20)).toBe(20);
    expect(pageOffset(5, 15)).toBe(60);
    expect(pageOffset(3, 500)).toBe(1000);
  });
});
