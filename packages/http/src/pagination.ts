export interface PageMeta {
  current_page: number;
  per_page: number;
  total: number;
  last_page: number;
}

export function pageMeta(page: number, perPage: number, total: number): PageMeta {
  return { current_page: page, per_page: perPage, total, last_page: Math.max(1, Math.ceil(total / perPage)) };
}

export function pageOffset(page: number, perPage: number): number {
  return (page - 1) * perPage;
}
