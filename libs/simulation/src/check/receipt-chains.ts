// The receipt chains, checked from the stored events with the contracts' chain helpers, as
// `tally receipts verify` checks an export (ADR 0030): each receipt's chain_index follows
// its chain's last one, its prev_hash covers that receipt (or, for index 0, the
// capability's issue event as stored), and its signature verifies. Also: a command id is
// answered by one receipt, ever (B17).
import type { Signer } from '@tally/budget-application';
import { issueEventHash, receiptChainKey, receiptHash, UNANCHORED_CHAIN_HASH } from '@tally/contracts';
import type { SimMessage } from '../store/sim-stream.js';

interface Head {
  next: number;
  hash: string;
}

export class ReceiptChains {
  private readonly heads = new Map<string, Head>();
  private readonly commands = new Map<string, string>();
  receipts = 0;

  constructor(
    private readonly signer: Signer,
    private readonly violation: (detail: string) => void,
  ) {}

  apply(message: SimMessage): void {
    for (const { event } of message.events) {
      const payload = event.payload as Record<string, unknown>;
      if (event.type === 'CapabilityIssued') {
        const id = payload['capability_id'] as string;
        if (!this.heads.has(id))
          this.heads.set(id, { next: 0, hash: issueEventHash({ event_id: event.eventId, data: payload }) });
      } else if (event.type === 'ReceiptRecorded') this.receipt(payload);
    }
  }

  private receipt(payload: Record<string, unknown>): void {
    this.receipts++;
    const body = payload['receipt'] as Record<string, unknown>;
    const signature = payload['signature'] as string;
    const id = body['id'] as string;
    const commandKey = `${id.split(':')[1]}:${payload['command_id'] as string}`;
    const earlier = this.commands.get(commandKey);
    if (earlier !== undefined) this.violation(`command ${commandKey} has a second receipt (${earlier} then ${id})`);
    this.commands.set(commandKey, id);
    if (!this.signer.verify(body, signature, body['key_id'] as string))
      this.violation(`receipt ${id} does not verify under ${String(body['key_id'])}`);
    const key = receiptChainKey(body);
    const head = this.heads.get(key) ?? { next: 0, hash: UNANCHORED_CHAIN_HASH };
    if (body['chain_index'] !== head.next || body['prev_hash'] !== head.hash)
      this.violation(
        `receipt ${id} is at ${String(body['chain_index'])} after ${String(body['prev_hash']).slice(0, 12)}; its chain ${key} is at ${head.next} after ${head.hash.slice(0, 12)}`,
      );
    this.heads.set(key, { next: head.next + 1, hash: receiptHash({ ...body, signature }) });
  }
}
