// Anthropic Messages requests: into the neutral model (validating as it goes) and out of it,
// as the body Tally sends an Anthropic-kind provider. System prompts are a top-level field
// there and tool results are blocks of a user message; neutrally they are messages.
import { arr, bool, FieldError, int, num, obj, optStr, stopList, str, translate, unknownFields } from './fields.js';
import { parseArguments, textOf } from './fields.js';
import type {
  JsonObject,
  NeutralMessage,
  NeutralRequest,
  Part,
  ToolChoice,
  ToolDefinition,
  Translated,
} from './neutral.types.js';
import { MESSAGES_MAX, TOOLS_MAX } from './openai.request.js';

const KNOWN = new Set([
  'model',
  'messages',
  'system',
  'tools',
  'tool_choice',
  'max_tokens',
  'temperature',
  'top_p',
  'stop_sequences',
  'stream',
]);

export function anthropicRequestIn(body: unknown): Translated<NeutralRequest> {
  return translate(() => {
    const b = obj(body, 'body');
    const system = b['system'] === undefined ? [] : [{ role: 'system' as const, parts: systemIn(b['system']) }];
    const messages = arr(b['messages'], 'messages', 1, MESSAGES_MAX).flatMap((m, i) => messageIn(m, `messages[${i}]`));
    const tools = b['tools'] === undefined ? undefined : toolsIn(b['tools']);
    const toolChoice = toolChoiceIn(b['tool_choice']);
    const maxTokens = int(b['max_tokens'], 'max_tokens', 1, 1_000_000);
    if (maxTokens === undefined) throw new FieldError('max_tokens', 'max_tokens is required');
    const stop = stopList(b['stop_sequences'], 'stop_sequences');
    const temperature = num(b['temperature'], 'temperature', 0, 1);
    const topP = num(b['top_p'], 'top_p', 0, 1);
    const passthrough = unknownFields(b, KNOWN);
    return {
      model: str(b['model'], 'model', 256),
      messages: [...system, ...messages],
      ...(tools ? { tools } : {}),
      ...(toolChoice ? { tool_choice: toolChoice } : {}),
      max_tokens: maxTokens,
      sampling: {
        ...(temperature === undefined ? {} : { temperature }),
        ...(topP === undefined ? {} : { top_p: topP }),
        ...(stop ? { stop } : {}),
      },
      stream: bool(b['stream'], 'stream') ?? false,
      ...(passthrough ? { passthrough: { dialect: 'anthropic' as const, fields: passthrough } } : {}),
    };
  });
}

function systemIn(value: unknown): Part[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  return arr(value, 'system', 0, 1_000).map((b, i) => {
    const block = obj(b, `system[${i}]`);
    if (block['type'] !== 'text') throw new FieldError(`system[${i}].type`, `system[${i}].type must be text`);
    return { type: 'text', text: str(block['text'], `system[${i}].text`) };
  });
}

/** A user message's tool results become `tool` messages (in order), the rest stays a user message. */
function messageIn(value: unknown, field: string): NeutralMessage[] {
  const m = obj(value, field);
  if (m['role'] !== 'user' && m['role'] !== 'assistant')
    throw new FieldError(`${field}.role`, `${field}.role must be user or assistant`);
  const parts = contentIn(m['content'], `${field}.content`);
  if (m['role'] === 'assistant') return [{ role: 'assistant', parts }];
  const results = parts
    .filter((p) => p.type === 'tool_result')
    .map((p): NeutralMessage => ({ role: 'tool', parts: [p] }));
  const rest = parts.filter((p) => p.type !== 'tool_result');
  return rest.length > 0 || results.length === 0 ? [...results, { role: 'user', parts: rest }] : results;
}

function contentIn(value: unknown, field: string): Part[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  return arr(value, field, 0, 1_000).map((b, i) => blockIn(b, `${field}[${i}]`));
}

function blockIn(value: unknown, field: string): Part {
  const b = obj(value, field);
  switch (b['type']) {
    case 'text':
      return { type: 'text', text: str(b['text'], `${field}.text`) };
    case 'image': {
      const source = obj(b['source'], `${field}.source`);
      if (source['type'] === 'url') return { type: 'image', url: str(source['url'], `${field}.source.url`, 20_000) };
      return {
        type: 'image',
        media_type: str(source['media_type'], `${field}.source.media_type`, 128),
        data: str(source['data'], `${field}.source.data`, 20_000_000),
      };
    }
    case 'tool_use':
      return {
        type: 'tool_call',
        id: str(b['id'], `${field}.id`, 256),
        name: str(b['name'], `${field}.name`, 256),
        arguments: JSON.stringify(b['input'] === undefined ? {} : obj(b['input'], `${field}.input`)),
      };
    case 'tool_result': {
      const content = b['content'] === undefined ? [] : contentIn(b['content'], `${field}.content`);
      return {
        type: 'tool_result',
        tool_call_id: str(b['tool_use_id'], `${field}.tool_use_id`, 256),
        content: textOf(content as { type: string; text?: string }[]),
        ...(bool(b['is_error'], `${field}.is_error`) ? { is_error: true } : {}),
      };
    }
    default:
      return { type: 'raw', dialect: 'anthropic', value: b };
  }
}

function toolsIn(value: unknown): ToolDefinition[] {
  return arr(value, 'tools', 0, TOOLS_MAX).map((t, i) => {
    const tool = obj(t, `tools[${i}]`);
    if (tool['type'] !== undefined && tool['type'] !== 'custom')
      throw new FieldError(`tools[${i}].type`, `tools[${i}].type: only custom (client) tools pass through Tally`);
    const description = optStr(tool['description'], `tools[${i}].description`, 100_000);
    return {
      name: str(tool['name'], `tools[${i}].name`, 256),
      ...(description === undefined ? {} : { description }),
      parameters: obj(tool['input_schema'], `tools[${i}].input_schema`),
    };
  });
}

function toolChoiceIn(value: unknown): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  const c = obj(value, 'tool_choice');
  switch (c['type']) {
    case 'auto':
    case 'none':
      return { type: c['type'] };
    case 'any':
      return { type: 'required' };
    case 'tool':
      return { type: 'tool', name: str(c['name'], 'tool_choice.name', 256) };
    default:
      throw new FieldError('tool_choice.type', 'tool_choice.type must be auto, any, tool or none');
  }
}

// ---- out: the body for an Anthropic-kind provider (always streamed).

export function anthropicRequestOut(req: NeutralRequest, model: string, maxTokens: number): JsonObject {
  const system = req.messages
    .filter((m) => m.role === 'system')
    .map((m) => textOf(m.parts as { type: string; text?: string }[]));
  const body: JsonObject = {
    ...(req.passthrough?.dialect === 'anthropic' ? req.passthrough.fields : {}),
    model,
    max_tokens: maxTokens,
    messages: mergeTurns(req.messages.filter((m) => m.role !== 'system')),
    stream: true,
  };
  if (system.length > 0) body['system'] = system.join('\n\n');
  if (req.tools && req.tools.length > 0) body['tools'] = req.tools.map(toolOut);
  if (req.tool_choice) body['tool_choice'] = toolChoiceOut(req.tool_choice);
  if (req.sampling.temperature !== undefined) body['temperature'] = Math.min(1, req.sampling.temperature);
  if (req.sampling.top_p !== undefined) body['top_p'] = req.sampling.top_p;
  if (req.sampling.stop && req.sampling.stop.length > 0) body['stop_sequences'] = req.sampling.stop;
  return body;
}

/** Tool results travel as blocks of a user turn; consecutive user-side messages become one turn. */
function mergeTurns(messages: readonly NeutralMessage[]): JsonObject[] {
  const turns: { role: 'user' | 'assistant'; content: JsonObject[] }[] = [];
  for (const m of messages) {
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    const blocks = m.parts.flatMap(blockOut);
    const last = turns.at(-1);
    if (last && last.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  }
  return turns.map((t) =>
    t.content.every((b) => b['type'] === 'text') && t.content.length === 1
      ? { role: t.role, content: t.content[0]!['text'] }
      : { role: t.role, content: t.content },
  );
}

function blockOut(p: Part): JsonObject[] {
  switch (p.type) {
    case 'text':
      return [{ type: 'text', text: p.text }];
    case 'image':
      return [
        {
          type: 'image',
          source:
            p.url !== undefined
              ? { type: 'url', url: p.url }
              : { type: 'base64', media_type: p.media_type, data: p.data },
        },
      ];
    case 'tool_call':
      return [{ type: 'tool_use', id: p.id, name: p.name, input: parseArguments(p.arguments) }];
    case 'tool_result':
      return [
        {
          type: 'tool_result',
          tool_use_id: p.tool_call_id,
          content: p.content,
          ...(p.is_error ? { is_error: true } : {}),
        },
      ];
    case 'raw':
      return p.dialect === 'anthropic' ? [p.value] : [];
  }
}

function toolOut(t: ToolDefinition): JsonObject {
  return {
    name: t.name,
    ...(t.description === undefined ? {} : { description: t.description }),
    input_schema: t.parameters,
  };
}

function toolChoiceOut(c: ToolChoice): JsonObject {
  if (c.type === 'required') return { type: 'any' };
  if (c.type === 'tool') return { type: 'tool', name: c.name };
  return { type: c.type };
}
