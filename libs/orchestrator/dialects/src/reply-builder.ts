// Folds streamed deltas into a whole reply, bounded, so one stream yields both what the
// caller saw chunk by chunk and the record the ledger keeps.
import type { Delta, NeutralReply, NeutralUsage, Part, StopReason } from './neutral.types.js';

type MutablePart = { type: 'text'; text: string } | { type: 'tool_call'; id: string; name: string; arguments: string };

export class ReplyBuilder {
  private readonly parts: MutablePart[] = [];
  private readonly calls = new Map<number, { type: 'tool_call'; id: string; name: string; arguments: string }>();
  private chars = 0;

  constructor(private readonly charsMax: number) {}

  /** Adds one delta; throws when the reply outgrows its bound, because a runaway stream must not exhaust memory. */
  add(delta: Delta): void {
    const size = delta.kind === 'tool_call_start' ? delta.name.length + delta.id.length : delta.text.length;
    this.chars += size;
    if (this.chars > this.charsMax) throw new RangeError(`reply exceeded ${this.charsMax} characters`);
    if (delta.kind === 'text') {
      if (delta.text === '') return;
      const last = this.parts.at(-1);
      if (last?.type === 'text') last.text += delta.text;
      else this.parts.push({ type: 'text', text: delta.text });
    } else if (delta.kind === 'tool_call_start') {
      const call = { type: 'tool_call' as const, id: delta.id, name: delta.name, arguments: '' };
      this.calls.set(delta.index, call);
      this.parts.push(call);
    } else {
      const call = this.calls.get(delta.index);
      if (!call) throw new RangeError(`arguments for tool call ${delta.index} before its start`);
      call.arguments += delta.text;
    }
  }

  get text(): string {
    let text = '';
    for (const p of this.parts) if (p.type === 'text') text += p.text;
    return text;
  }

  get hasToolCalls(): boolean {
    return this.calls.size > 0;
  }

  get empty(): boolean {
    return this.parts.length === 0;
  }

  /** The parts so far, as plain values (a copy: later deltas do not change it). */
  snapshot(): Part[] {
    return this.parts.map((p) => ({ ...p }));
  }

  reply(stop: StopReason, usage?: NeutralUsage): NeutralReply {
    return { parts: this.snapshot(), stop_reason: stop, ...(usage ? { usage } : {}) };
  }
}

/** The deltas that replay a whole reply, for a stream answered from the record (an idempotent retry). */
export function deltasOf(parts: readonly Part[]): Delta[] {
  const deltas: Delta[] = [];
  let index = 0;
  for (const p of parts) {
    if (p.type === 'text') deltas.push({ kind: 'text', text: p.text });
    if (p.type === 'tool_call') {
      deltas.push({ kind: 'tool_call_start', index, id: p.id, name: p.name });
      if (p.arguments !== '') deltas.push({ kind: 'tool_call_args', index, text: p.arguments });
      index++;
    }
  }
  return deltas;
}
