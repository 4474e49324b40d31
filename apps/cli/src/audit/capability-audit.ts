// `tally audit capability <id>`: a capability's timeline (its issue, delegations, every
// hold's mutations with their causes, receipts, ambiguities and their resolution, the
// revocation), its holds and usage per grant, and the check of its receipts: each
// signature against the published keys and the hash chain from index 0 without a gap
// (the same check as `tally receipts verify`, ADR 0030). A broken check is exit 1.
import type { TallyHttp } from '../cli/http.js';
import { keysFromAuthority } from '../receipts/published-keys-file.js';
import { ReceiptVerifier, type BadReceipt } from '../receipts/verify-receipts.js';
import { summaryOf, type ReceiptSummary } from './work-audit.js';

type Json = Record<string, unknown>;

/** Pages of 1,000 receipts; the bound is far above any one capability's receipts. */
const RECEIPT_PAGE = 1_000;
const RECEIPT_PAGES_MAX = 10_000;
/** The authority's most mutation events per read. */
const EVENTS_MAX = 1_000;

export interface TimelineEntry {
  readonly at: string | null;
  readonly what: string;
  readonly detail: string;
}

export interface ChainCheck {
  readonly ok: boolean;
  readonly receipts: number;
  /** Receipts from before the chain (ADR 0030): checked by signature only. */
  readonly unchained: number;
  readonly bad: readonly BadReceipt[];
}

export interface CapabilityAudit {
  readonly capability: Json;
  readonly usage: readonly Json[];
  readonly holds: readonly Json[];
  readonly ambiguities: readonly Json[];
  readonly receipts: readonly ReceiptSummary[];
  readonly timeline: readonly TimelineEntry[];
  readonly chain: ChainCheck;
}

export async function auditCapability(http: TallyHttp, id: string): Promise<CapabilityAudit> {
  const path = `/v1/capabilities/${encodeURIComponent(id)}`;
  const capability = await http.get<Json>('authority', path);
  const [usage, events, holds, ambiguities, receipts, keys] = await Promise.all([
    http.get<{ grants: Json[] }>('authority', `${path}/usage`),
    http.get<{ events: Json[] }>('authority', `${path}/events?limit=${EVENTS_MAX}`),
    http.get<{ holds: Json[] }>('authority', `${path}/holds`),
    http.get<{ ambiguities: Json[] }>('authority', `${path}/ambiguities`),
    receiptsOf(http, id),
    keysFromAuthority(http),
  ]);
  const verifier = new ReceiptVerifier(keys);
  receipts.forEach((r, i) => verifier.line(JSON.stringify(r), i + 1));
  const report = verifier.report();
  const bad = [...report.bad, ...chainStartProblems(receipts)];
  return {
    capability,
    usage: usage.grants,
    holds: holds.holds,
    ambiguities: ambiguities.ambiguities,
    receipts: receipts.map(summaryOf),
    timeline: timelineOf(capability, events.events, receipts, ambiguities.ambiguities),
    chain: { ok: bad.length === 0, receipts: report.receipts, unchained: report.unchained, bad },
  };
}

/** Every receipt of the capability, oldest first (the chain's order). */
async function receiptsOf(http: TallyHttp, id: string): Promise<Json[]> {
  const out: Json[] = [];
  let after: string | null = null;
  for (let page = 0; page < RECEIPT_PAGES_MAX; page++) {
    const query = new URLSearchParams({ capability_id: id, limit: String(RECEIPT_PAGE) });
    if (after !== null) query.set('after', after);
    const body: { receipts: Json[]; next_after: string | null } = await http.get('authority', `/v1/receipts?${query}`);
    out.push(...body.receipts);
    after = body.next_after;
    if (after === null) break;
  }
  return out;
}

/** An export may start anywhere, but an audit reads the whole chain: it must start at index 0. */
function chainStartProblems(receipts: readonly Json[]): BadReceipt[] {
  const first = receipts.findIndex((r) => typeof r['chain_index'] === 'number');
  if (first < 0 || receipts[first]!['chain_index'] === 0) return [];
  return [
    {
      line: first + 1,
      id: String(receipts[first]!['id']),
      reasons: [`the chain starts at index ${String(receipts[first]!['chain_index'])}: earlier receipts are missing`],
    },
  ];
}

function timelineOf(
  capability: Json,
  mutations: readonly Json[],
  receipts: readonly Json[],
  ambiguities: readonly Json[],
): TimelineEntry[] {
  const entries: TimelineEntry[] = [];
  const parent = typeof capability['parent_id'] === 'string' ? `, delegated from ${capability['parent_id']}` : '';
  entries.push({
    at: str(capability['issued_at']),
    what: 'issued',
    detail: `expires ${capability['expires_at']}${parent}`,
  });
  for (const child of (capability['children'] ?? []) as string[])
    entries.push({ at: null, what: 'delegated', detail: `to ${child}` });
  // The authority lists mutations newest first; the timeline reads oldest first.
  for (const m of [...mutations].reverse())
    entries.push({
      at: str(m['occurred_at']),
      what: String(m['kind']),
      detail: [
        `grant ${m['grant_index']}`,
        `hold ${m['hold_id']}`,
        m['cause'] ? `cause ${m['cause']}` : '',
        `exposed ${signed(m['exposed_delta_units'])}`,
        `realized ${signed(m['realized_delta_units'])}`,
      ]
        .filter(Boolean)
        .join(', '),
    });
  for (const r of receipts)
    entries.push({
      at: str(r['issued_at']),
      what: `receipt ${r['kind']}`,
      detail: [
        `${r['verdict']}${r['reason'] ? ` (${r['reason']})` : ''}`,
        r['settlement'] ? `settlement ${r['settlement']}` : '',
        typeof r['chain_index'] === 'number' ? `chain #${r['chain_index']}` : 'unchained',
      ]
        .filter(Boolean)
        .join(', '),
    });
  for (const a of ambiguities)
    entries.push({
      at: null,
      what: a['resolution'] ? 'ambiguity resolved' : 'ambiguity open',
      detail: `${a['kind']} on hold ${a['hold_id']}${a['resolution'] ? `: ${a['resolution']}` : ''}`,
    });
  if (typeof capability['revoked_at'] === 'string')
    entries.push({
      at: capability['revoked_at'],
      what: 'revoked',
      detail: capability['revoked_via'] === capability['id'] ? 'itself' : `through ${capability['revoked_via']}`,
    });
  // By time; an entry without one (a delegation, an ambiguity) sorts with the entry before it.
  let last = '';
  return entries
    .map((e, i) => ({ e, i, key: (last = e.at ?? last) }))
    .sort((a, b) => a.key.localeCompare(b.key) || a.i - b.i)
    .map(({ e }) => e);
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const signed = (v: unknown): string => (String(v).startsWith('-') ? String(v) : `+${String(v)}`);
