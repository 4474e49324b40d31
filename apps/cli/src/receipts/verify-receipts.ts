// The offline check of an export (ADR 0030): every line's signature against the published
// keys, and within each chain that indexes run without a gap from the first exported
// receipt and that each prev_hash is the hash of the chain's line before. A receipt whose
// signature fails tells nothing about its neighbours, so the chain skips its hash check on
// the next line: an edited byte names the edited line only. A deleted receipt names the
// line after the gap; two swapped receipts name both. A receipt deleted from the very end of
// a chain leaves no trace in the export itself (ADR 0030).
import { verify } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { canonicalJson, receiptChainKey, receiptHash } from '@tally/contracts';
import type { KeyRing } from './published-keys-file.js';

export interface BadReceipt {
  readonly line: number;
  readonly id: string | undefined;
  readonly reasons: readonly string[];
}

export interface VerifyReport {
  readonly receipts: number;
  readonly chains: number;
  readonly unchained: number;
  readonly bad: readonly BadReceipt[];
}

interface ChainPosition {
  readonly index: number;
  readonly line: number;
  /** undefined when that receipt's signature failed: its hash proves nothing. */
  readonly hash: string | undefined;
}

export class ReceiptVerifier {
  private readonly chains = new Map<string, ChainPosition>();
  private readonly bad: BadReceipt[] = [];
  private receipts = 0;
  private unchained = 0;

  constructor(private readonly keys: KeyRing) {}

  /** Checks one JSONL line (1-based number); blank lines are skipped. */
  line(text: string, line: number): void {
    if (text.trim() === '') return;
    this.receipts++;
    let receipt: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      receipt = parsed as Record<string, unknown>;
    } catch {
      this.bad.push({ line, id: undefined, reasons: ['not a JSON object (the line was cut or edited)'] });
      return;
    }
    const id = typeof receipt['id'] === 'string' ? receipt['id'] : undefined;
    const reasons: string[] = [];
    const signed = this.signatureProblem(receipt);
    if (signed) reasons.push(signed);
    reasons.push(...this.chainProblems(receipt, line, signed === undefined));
    if (reasons.length > 0) this.bad.push({ line, id, reasons });
  }

  report(): VerifyReport {
    return { receipts: this.receipts, chains: this.chains.size, unchained: this.unchained, bad: this.bad };
  }

  private signatureProblem(receipt: Record<string, unknown>): string | undefined {
    const { signature, ...body } = receipt;
    const keyId = body['key_id'];
    if (typeof signature !== 'string' || typeof keyId !== 'string') return 'no signature or key_id';
    const key = this.keys.get(keyId);
    if (!key) return `signed with key ${keyId}, which is not among the published keys`;
    let ok = false;
    try {
      ok = verify(null, Buffer.from(canonicalJson(body)), key, Buffer.from(signature, 'base64url'));
    } catch {
      ok = false;
    }
    return ok ? undefined : `signature does not verify with key ${keyId}: the receipt was changed after signing`;
  }

  private chainProblems(receipt: Record<string, unknown>, line: number, trusted: boolean): string[] {
    const index = receipt['chain_index'];
    if (index === undefined && receipt['prev_hash'] === undefined) {
      this.unchained++;
      return [];
    }
    if (
      typeof index !== 'number' ||
      !Number.isSafeInteger(index) ||
      index < 0 ||
      typeof receipt['prev_hash'] !== 'string'
    )
      return ['chain_index or prev_hash is malformed'];
    const key = receiptChainKey(receipt);
    const before = this.chains.get(key);
    // A receipt that goes backwards leaves the chain at the furthest one, so the receipt after a swap links again.
    if (before === undefined || index > before.index)
      this.chains.set(key, { index, line, hash: trusted ? receiptHash(receipt) : undefined });
    if (before === undefined) return [];
    const chain = key.startsWith('tree:')
      ? `the receipts of tree ${key.slice(5)} naming no capability`
      : `capability ${key}`;
    const problems: string[] = [];
    if (index <= before.index)
      problems.push(
        `chain_index ${index} of ${chain} comes after ${before.index} (line ${before.line}): receipts reordered or repeated`,
      );
    else if (index > before.index + 1) {
      const missing = index - before.index - 1;
      problems.push(
        `chain_index ${index} of ${chain} follows ${before.index} (line ${before.line}): ${missing} receipt${missing === 1 ? '' : 's'} missing before it`,
      );
    } else if (before.hash !== undefined && receipt['prev_hash'] !== before.hash)
      problems.push(`prev_hash is not the hash of the receipt on line ${before.line} (${chain})`);
    return problems;
  }
}

/** Checks a JSONL file line by line (streamed: an export can be large). */
export async function verifyFile(file: string, keys: KeyRing): Promise<VerifyReport> {
  const verifier = new ReceiptVerifier(keys);
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  let number = 0;
  for await (const text of lines) verifier.line(text, ++number);
  return verifier.report();
}
