import { and, asc, count, eq, inArray, isNotNull, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { ledgerEntries, type LedgerEntry } from '../../db/schema/index.js';

export interface Posting {
  /** Names the movement, so that posting it again changes nothing: `charge:<payment>`, `refund:<move>`… */
  transactionId: string;
  kind: 'charge' | 'refund' | 'transfer' | 'reversal' | 'payout' | 'payout_failed';
  paymentId?: number | null;
  prestataireId?: number | null;
  moveId?: number | null;
  currency?: string;
  entries: { account: string; amountCents: number }[];
}

/** The ledger's accounts (DESIGN.md §11). */
export const ledgerAccounts = {
  client: (id: number) => `client:${id}`,
  fees: 'platform:fees',
  refunds: 'refunds',
  held: (id: number) => `prestataire:${id}:held`,
  payable: (id: number) => `prestataire:${id}:payable`,
  paidOut: (id: number) => `prestataire:${id}:paid_out`,
};

/**
 * Posts one balanced group: its entries must sum to zero (a bug otherwise, thrown before anything is
 * written). Entries of zero are left out. A group already posted under the same transaction id is
 * not posted again; answers whether it was posted now.
 */
export async function post(db: DbTx, p: Posting): Promise<boolean> {
  const entries = p.entries.filter((e) => e.amountCents !== 0);
  const sum = entries.reduce((s, e) => s + e.amountCents, 0);
  if (sum !== 0 || entries.some((e) => !Number.isInteger(e.amountCents))) {
    throw new Error(`ledger: the entries of ${p.transactionId} do not balance (sum ${sum})`);
  }
  if (entries.length === 0) return false;
  const rows = await db
    .insert(ledgerEntries)
    .values(
      entries.map((e) => ({
        transactionId: p.transactionId,
        kind: p.kind,
        account: e.account,
        amountCents: e.amountCents,
        currency: p.currency ?? 'EUR',
        paymentId: p.paymentId ?? null,
        prestataireId: p.prestataireId ?? null,
        moveId: p.moveId ?? null,
      })),
    )
    .onConflictDoNothing()
    .returning({ id: ledgerEntries.id });
  return rows.length > 0;
}

/**
 * Posts an amount from one account to another (a transfer, a reversal, a payout and its failure):
 * the group of two entries, `from` debited and `to` credited.
 */
export function postBetween(db: DbTx, p: Omit<Posting, 'entries'> & { from: string; to: string; amountCents: number }): Promise<boolean> {
  const { from, to, amountCents, ...rest } = p;
  return post(db, { ...rest, entries: [{ account: from, amountCents: -amountCents }, { account: to, amountCents }] });
}

export interface LedgerFilters {
  paymentId?: number;
  prestataireId?: number;
}

function where(f: LedgerFilters): SQL | undefined {
  return and(
    f.paymentId === undefined ? undefined : eq(ledgerEntries.paymentId, f.paymentId),
    f.prestataireId === undefined ? undefined : eq(ledgerEntries.prestataireId, f.prestataireId),
  );
}

export async function listEntries(db: DbTx, f: LedgerFilters, limit: number, offset: number): Promise<{ rows: LedgerEntry[]; total: number }> {
  const w = where(f);
  const [rows, [total]] = await Promise.all([
    db.select().from(ledgerEntries).where(w).orderBy(asc(ledgerEntries.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(ledgerEntries).where(w),
  ]);
  return { rows, total: total?.n ?? 0 };
}

/** The balance of each account over the entries the filters select. */
export async function balances(db: DbTx, f: LedgerFilters): Promise<Record<string, number>> {
  const rows = await db
    .select({ account: ledgerEntries.account, total: sql<string>`sum(${ledgerEntries.amountCents})` })
    .from(ledgerEntries)
    .where(where(f))
    .groupBy(ledgerEntries.account)
    .orderBy(ledgerEntries.account);
  return Object.fromEntries(rows.map((r) => [r.account, Number(r.total)]));
}

/** Transaction ids whose entries do not sum to zero (none, unless the table was written by hand). */
export async function unbalancedTransactions(db: DbTx): Promise<{ transactionId: string; sum: number }[]> {
  const rows = await db
    .select({ transactionId: ledgerEntries.transactionId, sum: sql<string>`sum(${ledgerEntries.amountCents})` })
    .from(ledgerEntries)
    .groupBy(ledgerEntries.transactionId)
    .having(sql`sum(${ledgerEntries.amountCents}) <> 0`);
  return rows.map((r) => ({ transactionId: r.transactionId, sum: Number(r.sum) }));
}

/** Per payment: the balance of each kind of account (client, fees, refunds, held, payable). */
export async function paymentBalances(db: DbTx, paymentIds?: number[]) {
  const kind = sql<string>`case when ${ledgerEntries.account} like 'client:%' then 'client'
    when ${ledgerEntries.account} like 'prestataire:%:held' then 'held'
    when ${ledgerEntries.account} like 'prestataire:%:payable' then 'payable'
    when ${ledgerEntries.account} like 'prestataire:%:paid_out' then 'paid_out'
    else ${ledgerEntries.account} end`;
  const rows = await db
    .select({ paymentId: ledgerEntries.paymentId, kind, total: sql<string>`sum(${ledgerEntries.amountCents})` })
    .from(ledgerEntries)
    .where(paymentIds ? inArray(ledgerEntries.paymentId, paymentIds) : isNotNull(ledgerEntries.paymentId))
    .groupBy(ledgerEntries.paymentId, sql`2`);
  const out = new Map<number, Record<string, number>>();
  for (const r of rows) {
    const m = out.get(r.paymentId!) ?? {};
    m[r.kind] = Number(r.total);
    out.set(r.paymentId!, m);
  }
  return out;
}

/** Per prestataire: the payouts the ledger recorded (paid out less failed). */
export async function paidOutOf(db: DbTx, prestataireId: number): Promise<number> {
  const [row] = await db
    .select({ total: sql<string>`coalesce(sum(${ledgerEntries.amountCents}), 0)` })
    .from(ledgerEntries)
    .where(and(eq(ledgerEntries.account, ledgerAccounts.paidOut(prestataireId))));
  return Number(row?.total ?? 0);
}

/** Per payment, what the ledger says moved: charged, refunded, transferred and reversed (cents). */
export async function movementTotals(db: DbTx, paymentIds: number[]) {
  if (paymentIds.length === 0) return new Map<number, { charged: number; refunded: number; transferred: number; reversed: number; held: number }>();
  const rows = await db
    .select({
      paymentId: ledgerEntries.paymentId,
      charged: sql<string>`coalesce(-sum(${ledgerEntries.amountCents}) filter (where ${ledgerEntries.account} like 'client:%'), 0)`,
      refunded: sql<string>`coalesce(sum(${ledgerEntries.amountCents}) filter (where ${ledgerEntries.account} = 'refunds'), 0)`,
      transferred: sql<string>`coalesce(sum(${ledgerEntries.amountCents}) filter (where ${ledgerEntries.kind} = 'transfer' and ${ledgerEntries.account} like '%:payable'), 0)`,
      reversed: sql<string>`coalesce(sum(${ledgerEntries.amountCents}) filter (where ${ledgerEntries.kind} = 'reversal' and ${ledgerEntries.account} like '%:held'), 0)`,
      held: sql<string>`coalesce(sum(${ledgerEntries.amountCents}) filter (where ${ledgerEntries.account} like '%:held'), 0)`,
    })
    .from(ledgerEntries)
    .where(inArray(ledgerEntries.paymentId, paymentIds))
    .groupBy(ledgerEntries.paymentId);
  return new Map(
    rows.map((r) => [r.paymentId!, { charged: Number(r.charged), refunded: Number(r.refunded), transferred: Number(r.transferred), reversed: Number(r.reversed), held: Number(r.held) }]),
  );
}
