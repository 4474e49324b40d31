// Anthropic Messages replies: reading a provider's typed SSE events into neutral deltas, and
// writing a neutral reply (whole, or as its event stream) for an Anthropic client.
import { isObject, parseArguments } from './fields.js';
import type { Delta, JsonObject, NeutralReply, NeutralUsage, StopReason } from './neutral.types.js';
import type { ReplyMeta } from './openai.reply.js';
import { ANTHROPIC_STOP_OF, STOP_OF_ANTHROPIC } from './tables.js';

export interface EventReading {
  readonly deltas: Delta[];
  readonly finish?: StopReason;
  /** message_stop arrived: the message is whole. */
  readonly done?: boolean;
  /** An `error` event inside the stream, with its Anthropic error type. */
  readonly error?: { readonly type: string; readonly message: string };
}

/** Reads one message's events; content blocks of type tool_use become tool calls numbered from 0. */
export class AnthropicEventReader {
  private readonly toolOfBlock = new Map<number, number>();
  private inputTokens: number | undefined;
  private outputTokens: number | undefined;

  get usage(): NeutralUsage | undefined {
    if (this.inputTokens === undefined || this.outputTokens === undefined) return undefined;
    return { input_tokens: this.inputTokens, output_tokens: this.outputTokens };
  }

  /** Throws a TypeError when an event does not have Anthropic's shape. Unknown event types are ignored, as documented. */
  read(type: string, data: JsonObject): EventReading {
    switch (type) {
      case 'message_start': {
        const message = data['message'];
        if (!isObject(message)) throw new TypeError('message_start without a message object');
        this.readUsage(message['usage']);
        return { deltas: [] };
      }
      case 'content_block_start':
        return { deltas: this.blockStart(data) };
      case 'content_block_delta':
        return { deltas: this.blockDelta(data) };
      case 'message_delta': {
        this.readUsage(data['usage']);
        const delta = isObject(data['delta']) ? data['delta'] : {};
        const reason = delta['stop_reason'];
        return {
          deltas: [],
          ...(typeof reason === 'string' ? { finish: STOP_OF_ANTHROPIC[reason] ?? 'end_turn' } : {}),
        };
      }
      case 'message_stop':
        return { deltas: [], done: true };
      case 'error': {
        const error = isObject(data['error']) ? data['error'] : {};
        return {
          deltas: [],
          error: {
            type: typeof error['type'] === 'string' ? error['type'] : 'api_error',
            message: String(error['message'] ?? ''),
          },
        };
      }
      default:
        return { deltas: [] };
    }
  }

  private blockStart(data: JsonObject): Delta[] {
    const block = data['content_block'];
    if (!isObject(block) || typeof data['index'] !== 'number')
      throw new TypeError('content_block_start without a block');
    if (block['type'] === 'text')
      return typeof block['text'] === 'string' && block['text'] !== '' ? [{ kind: 'text', text: block['text'] }] : [];
    if (block['type'] !== 'tool_use') return [];
    if (typeof block['id'] !== 'string' || typeof block['name'] !== 'string')
      throw new TypeError('tool_use block without id and name');
    const index = this.toolOfBlock.size;
    this.toolOfBlock.set(data['index'], index);
    const input =
      isObject(block['input']) && Object.keys(block['input']).length > 0 ? JSON.stringify(block['input']) : '';
    const start: Delta = { kind: 'tool_call_start', index, id: block['id'], name: block['name'] };
    return input === '' ? [start] : [start, { kind: 'tool_call_args', index, text: input }];
  }

  private blockDelta(data: JsonObject): Delta[] {
    const delta = data['delta'];
    if (!isObject(delta)) throw new TypeError('content_block_delta without a delta object');
    if (delta['type'] === 'text_delta') {
      if (typeof delta['text'] !== 'string') throw new TypeError('text_delta without text');
      return delta['text'] === '' ? [] : [{ kind: 'text', text: delta['text'] }];
    }
    if (delta['type'] === 'input_json_delta') {
      const index = typeof data['index'] === 'number' ? this.toolOfBlock.get(data['index']) : undefined;
      if (index === undefined) throw new TypeError('input_json_delta outside a tool_use block');
      const text = delta['partial_json'];
      return typeof text === 'string' && text !== '' ? [{ kind: 'tool_call_args', index, text }] : [];
    }
    return []; // Thinking and signature deltas are not output.
  }

  /** Counts are cumulative: message_delta restates output (and, in newer versions, input) tokens. */
  private readUsage(usage: unknown): void {
    if (usage === undefined || usage === null) return;
    if (!isObject(usage)) throw new TypeError('usage is not an object');
    const count = (v: unknown) => {
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
        throw new TypeError('token count is not a non-negative integer');
      return v;
    };
    if (usage['input_tokens'] !== undefined && usage['input_tokens'] !== null)
      this.inputTokens = count(usage['input_tokens']);
    if (usage['output_tokens'] !== undefined && usage['output_tokens'] !== null)
      this.outputTokens = count(usage['output_tokens']);
  }
}

// ---- out: to an Anthropic client.

export function anthropicUsage(usage: NeutralUsage | undefined): JsonObject {
  return { input_tokens: usage?.input_tokens ?? 0, output_tokens: usage?.output_tokens ?? 0 };
}

export function anthropicReplyOut(reply: NeutralReply, meta: ReplyMeta): JsonObject {
  const content = reply.parts.flatMap((p): JsonObject[] => {
    if (p.type === 'text') return [{ type: 'text', text: p.text }];
    if (p.type === 'tool_call')
      return [{ type: 'tool_use', id: p.id, name: p.name, input: parseArguments(p.arguments) }];
    return [];
  });
  return {
    id: meta.id,
    type: 'message',
    role: 'assistant',
    model: meta.model,
    content,
    stop_reason: ANTHROPIC_STOP_OF[reply.stop_reason],
    stop_sequence: null,
    usage: anthropicUsage(reply.usage),
  };
}

/** Writes `event:`/`data:` pairs from message_start to message_stop; one content block per text run or tool call. */
export class AnthropicStreamWriter {
  private block = -1;
  private open: 'text' | 'tool' | undefined;

  constructor(private readonly meta: ReplyMeta) {}

  private frame(payload: { type: string } & JsonObject): string {
    return `event: ${payload.type}\ndata: ${JSON.stringify(payload)}\n\n`;
  }

  /** The usage is known only at the end; message_delta restates it whole (the SDKs take its counts). */
  start(): string {
    const message = {
      id: this.meta.id,
      type: 'message',
      role: 'assistant',
      model: this.meta.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0 },
    };
    return this.frame({ type: 'message_start', message });
  }

  delta(d: Delta): string {
    let out = '';
    if (d.kind === 'text') {
      if (this.open !== 'text') out += this.openBlock('text', { type: 'text', text: '' });
      return (
        out +
        this.frame({ type: 'content_block_delta', index: this.block, delta: { type: 'text_delta', text: d.text } })
      );
    }
    if (d.kind === 'tool_call_start')
      return this.openBlock('tool', { type: 'tool_use', id: d.id, name: d.name, input: {} });
    return this.frame({
      type: 'content_block_delta',
      index: this.block,
      delta: { type: 'input_json_delta', partial_json: d.text },
    });
  }

  private openBlock(kind: 'text' | 'tool', block: JsonObject): string {
    const out = this.closeBlock();
    this.block++;
    this.open = kind;
    return out + this.frame({ type: 'content_block_start', index: this.block, content_block: block });
  }

  private closeBlock(): string {
    if (this.open === undefined) return '';
    this.open = undefined;
    return this.frame({ type: 'content_block_stop', index: this.block });
  }

  end(stop: StopReason, usage: NeutralUsage | undefined): string {
    return (
      this.closeBlock() +
      this.frame({
        type: 'message_delta',
        delta: { stop_reason: ANTHROPIC_STOP_OF[stop], stop_sequence: null },
        usage: anthropicUsage(usage),
      }) +
      this.frame({ type: 'message_stop' })
    );
  }

  error(body: JsonObject): string {
    return `event: error\ndata: ${JSON.stringify(body)}\n\n`;
  }
}
