import { DateTime } from 'luxon';
import PDFDocument from 'pdfkit';
import type { Lang } from '../../db/schema/index.js';

export interface InvoiceInput {
  lang: Lang;
  number: string;
  issuedAt: Date;
  timeZone: string;
  /** The VAT rate included in the price, in percent. */
  vatPercent: number;
  seller: {
    businessName: string | null;
    firstName: string;
    lastName: string;
    siret: string | null;
    address: string | null;
    postalCode: string | null;
    city: string | null;
    email: string;
  };
  buyer: { firstName: string; lastName: string; email: string };
  line: { description: string; date: Date; amountCents: number };
  refundedCents: number;
  currency: string;
}

const LABELS = {
  fr: {
    title: 'Facture',
    number: 'Numéro',
    date: 'Date',
    seller: 'Prestataire',
    buyer: 'Client',
    siret: 'SIRET',
    description: 'Désignation',
    serviceOn: 'Prestation du',
    net: 'Total HT',
    vat: 'TVA',
    total: 'Total TTC',
    refunded: 'Remboursé',
    paid: 'Payé par carte via la plateforme',
  },
  en: {
    title: 'Invoice',
    number: 'Number',
    date: 'Date',
    seller: 'Service provider',
    buyer: 'Customer',
    siret: 'SIRET',
    description: 'Description',
    serviceOn: 'Service on',
    net: 'Total excl. VAT',
    vat: 'VAT',
    total: 'Total incl. VAT',
    refunded: 'Refunded',
    paid: 'Paid by card through the platform',
  },
} as const;

/** Cents as a decimal amount in the language's form: `1 234,50 EUR` or `1,234.50 EUR`. */
export function formatMoney(cents: number, currency: string, lang: Lang): string {
  const value = (cents / 100).toLocaleString(lang === 'fr' ? 'fr-FR' : 'en-GB', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  // Narrow no-break spaces of the French format are outside the PDF standard fonts' encoding.
  return `${value.replace(/[\u202f\u00a0]/g, ' ')} ${currency}`;
}

/** The VAT included in a price (prices are quoted all taxes included). */
export function vatIncluded(totalCents: number, vatPercent: number): number {
  return Math.round(totalCents - totalCents / (1 + vatPercent / 100));
}

/**
 * The invoice of a payment, issued on behalf of the prestataire (the seller) to the client (the
 * buyer), in the reader's language.
 */
export function renderInvoicePdf(input: InvoiceInput): Promise<Buffer> {
  const t = LABELS[input.lang] ?? LABELS.fr;
  const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: `${t.title} ${input.number}` } });
  const chunks: Buffer[] = [];
  doc.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  const day = (d: Date) => DateTime.fromJSDate(d, { zone: input.timeZone }).setLocale(input.lang).toLocaleString(DateTime.DATE_MED);
  const money = (c: number) => formatMoney(c, input.currency, input.lang);
  const total = input.line.amountCents;
  const vat = vatIncluded(total, input.vatPercent);

  doc.font('Helvetica-Bold').fontSize(20).text(`${t.title} ${input.number}`);
  doc.font('Helvetica').fontSize(10).text(`${t.number}: ${input.number}`).text(`${t.date}: ${day(input.issuedAt)}`);
  doc.moveDown();

  const s = input.seller;
  doc.font('Helvetica-Bold').text(t.seller);
  doc.font('Helvetica').text(s.businessName ?? `${s.firstName} ${s.lastName}`);
  if (s.address) doc.text(s.address);
  if (s.postalCode || s.city) doc.text(`${s.postalCode ?? ''} ${s.city ?? ''}`.trim());
  if (s.siret) doc.text(`${t.siret}: ${s.siret}`);
  doc.text(s.email);
  doc.moveDown();

  doc.font('Helvetica-Bold').text(t.buyer);
  doc.font('Helvetica').text(`${input.buyer.firstName} ${input.buyer.lastName}`).text(input.buyer.email);
  doc.moveDown();

  doc.font('Helvetica-Bold').text(t.description);
  doc.font('Helvetica').text(`${input.line.description} - ${t.serviceOn} ${day(input.line.date)}: ${money(total)}`);
  doc.moveDown();
  doc.text(`${t.net}: ${money(total - vat)}`);
  doc.text(`${t.vat} ${input.vatPercent} %: ${money(vat)}`);
  doc.font('Helvetica-Bold').text(`${t.total}: ${money(total)}`);
  doc.font('Helvetica');
  if (input.refundedCents > 0) doc.text(`${t.refunded}: ${money(input.refundedCents)}`);
  doc.moveDown().fontSize(8).text(t.paid);
  doc.end();
  return done;
}
