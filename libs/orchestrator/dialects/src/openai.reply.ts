// OpenAI Chat Completions replies: reading a provider's SSE chunks into neutral deltas, and
// writing a neutral reply (whole, or as a chunk stream) for an OpenAI client.
import { isObject } from './fields.js';
import type { Delta, JsonObject, NeutralReply, NeutralUsage, StopReason } from './neutral.types.js';
import { OPENAI_FINISH_OF, STOP_OF_OPENAI_FINISH } from './tables.js';

export interface ChunkReading {
  readonly deltas: Delta[];
  readonly finish?: StopReason;
  readonly usage?: NeutralUsage;
}

/** Reads the chunks of one streamed choice; tool calls are numbered by their `index` as OpenAI sends it. */
export class OpenAiChunkReader {
  private readonly started = new Set<number>();

  /** Throws a TypeError when a chunk does not have OpenAI's shape (the caller classifies it as unparseable). */
  read(chunk: JsonObject): ChunkReading {
    const deltas: Delta[] = [];
    let finish: StopReason | undefined;
    const choices = chunk['choices'];
    if (choices !== undefined && choices !== null && !Array.isArray(choices))
      throw new TypeError('choices is not an array');
    const choice: unknown = Array.isArray(choices)
      ? (choices.find((c) => isObject(c) && c['index'] === 0) ?? choices[0])
      : undefined;
    if (choice !== undefined) {
      if (!isObject(choice)) throw new TypeError('choice is not an object');
      const delta = choice['delta'];
      if (isObject(delta)) this.readDelta(delta, deltas);
      const reason = choice['finish_reason'];
      if (typeof reason === 'string') finish = STOP_OF_OPENAI_FINISH[reason] ?? 'end_turn';
    }
    const usage = usageOf(chunk['usage']);
    return { deltas, ...(finish ? { finish } : {}), ...(usage ? { usage } : {}) };
  }

  private readDelta(delta: JsonObject, out: Delta[]): void {
    const content = delta['content'];
    if (typeof content === 'string') {
      if (content !== '') out.push({ kind: 'text', text: content });
    } else if (content !== undefined && content !== null) throw new TypeError('delta.content is not a string');
    const calls = delta['tool_calls'];
    if (calls === undefined || calls === null) return;
    if (!Array.isArray(calls)) throw new TypeError('delta.tool_calls is not an array');
    for (const call of calls) {
      if (!isObject(call) || typeof call['index'] !== 'number') throw new TypeError('tool call delta without an index');
      const index = call['index'];
      const fn = isObject(call['function']) ? call['function'] : {};
      if (!this.started.has(index)) {
        if (typeof call['id'] !== 'string' || typeof fn['name'] !== 'string')
          throw new TypeError(`tool call ${index} starts without an id and a name`);
        this.started.add(index);
        out.push({ kind: 'tool_call_start', index, id: call['id'], name: fn['name'] });
      }
      if (typeof fn['arguments'] === 'string' && fn['arguments'] !== '')
        out.push({ kind: 'tool_call_args', index, text: fn['arguments'] });
    }
  }
}

function usageOf(usage: unknown): NeutralUsage | undefined {
  if (usage === undefined || usage === null) return undefined;
  if (!isObject(usage)) throw new TypeError('usage is not an object');
  const input = usage['prompt_tokens'];
  const output = usage['completion_tokens'];
  if (!isCount(input) || !isCount(output)) throw new TypeError('usage token counts are not non-negative integers');
  return { input_tokens: input, output_tokens: output };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

// ---- out: to an OpenAI client.

export interface ReplyMeta {
  /** Response id, derived from the work id. */
  readonly id: string;
  readonly model: string;
  /** Unix seconds. */
  readonly created: number;
}

export function openAiUsage(usage: NeutralUsage | undefined): JsonObject | null {
  if (!usage) return null;
  return {
    prompt_tokens: usage.input_tokens,
    completion_tokens: usage.output_tokens,
    total_tokens: usage.input_tokens + usage.output_tokens,
  };
}

export function openAiReplyOut(reply: NeutralReply, meta: ReplyMeta): JsonObject {
  const text = reply.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
  const calls = reply.parts.flatMap((p) =>
    p.type === 'tool_call' ? [{ id: p.id, type: 'function', function: { name: p.name, arguments: p.arguments } }] : [],
  );
  return {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && calls.length > 0 ? null : text,
          refusal: null,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        },
        logprobs: null,
        finish_reason: OPENAI_FINISH_OF[reply.stop_reason],
      },
    ],
    usage: openAiUsage(reply.usage),
  };
}

/** Writes `data:` lines of chat.completion.chunk objects, ending in `data: [DONE]`. */
export class OpenAiStreamWriter {
  constructor(
    private readonly meta: ReplyMeta,
    private readonly includeUsage: boolean,
  ) {}

  private frame(choices: unknown[], extra: JsonObject = {}): string {
    const chunk = {
      id: this.meta.id,
      object: 'chat.completion.chunk',
      created: this.meta.created,
      model: this.meta.model,
    };
    return `data: ${JSON.stringify({ ...chunk, choices, ...(this.includeUsage ? { usage: null } : {}), ...extra })}\n\n`;
  }

  start(): string {
    return this.frame([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
  }

  delta(d: Delta): string {
    const delta =
      d.kind === 'text'
        ? { content: d.text }
        : d.kind === 'tool_call_start'
          ? { tool_calls: [{ index: d.index, id: d.id, type: 'function', function: { name: d.name, arguments: '' } }] }
          : { tool_calls: [{ index: d.index, function: { arguments: d.text } }] };
    return this.frame([{ index: 0, delta, logprobs: null, finish_reason: null }]);
  }

  /** The finish chunk, the usage chunk when asked for (the receipt's usage), and the terminator. */
  end(stop: StopReason, usage: NeutralUsage | undefined): string {
    let out = this.frame([{ index: 0, delta: {}, logprobs: null, finish_reason: OPENAI_FINISH_OF[stop] }]);
    if (this.includeUsage) out += this.frame([], { usage: openAiUsage(usage) });
    return `${out}data: [DONE]\n\n`;
  }

  /** An error after the stream began: OpenAI's clients raise an `error` object seen in a data line. */
  error(body: JsonObject): string {
    return `data: ${JSON.stringify(body)}\n\n`;
  }
}
