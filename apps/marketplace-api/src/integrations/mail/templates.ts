import type { Lang } from '../../db/schema/index.js';

export interface RenderedMail {
  subject: string;
  /** Paragraphs of plain text; the HTML part is built from them, escaped. */
  paragraphs: string[];
  /** An optional call to action, shown as a link in HTML and as a line in text. */
  action?: { label: string; url: string };
}

/** One e-mail in both languages; the user's language picks the version. */
export interface MailTemplate<V> {
  name: string;
  render: Record<Lang, (vars: V) => RenderedMail>;
}

export function defineTemplate<V>(name: string, render: Record<Lang, (vars: V) => RenderedMail>): MailTemplate<V> {
  return { name, render };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

export function toText(mail: RenderedMail): string {
  const lines = [...mail.paragraphs];
  if (mail.action) lines.push(`${mail.action.label}: ${mail.action.url}`);
  return `${lines.join('\n\n')}\n`;
}

export function toHtml(mail: RenderedMail, lang: Lang): string {
  const body = mail.paragraphs.map((p) => `<p>${escapeHtml(p).replace(/\n/g, '<br>')}</p>`);
  if (mail.action) {
    body.push(`<p><a href="${escapeHtml(mail.action.url)}">${escapeHtml(mail.action.label)}</a></p>`);
  }
  return `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><title>${escapeHtml(mail.subject)}</title></head><body>${body.join('')}</body></html>`;
}
