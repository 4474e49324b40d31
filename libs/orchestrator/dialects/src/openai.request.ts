// OpenAI Chat Completions requests: into the neutral model (validating as it goes, so a bad
// field is named) and out of it, as the body Tally sends an OpenAI-kind provider.
import {
  arr,
  bool,
  FieldError,
  int,
  isObject,
  num,
  obj,
  optStr,
  stopList,
  str,
  textOf,
  translate,
  unknownFields,
} from './fields.js';
import type {
  JsonObject,
  NeutralMessage,
  NeutralRequest,
  Part,
  ToolChoice,
  ToolDefinition,
  Translated,
} from './neutral.types.js';

export const MESSAGES_MAX = 1_000;
export const TOOLS_MAX = 128;
const KNOWN = new Set([
  'model',
  'messages',
  'tools',
  'tool_choice',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'stop',
  'stream',
  'stream_options',
  'n',
]);

export function openAiRequestIn(body: unknown): Translated<NeutralRequest> {
  return translate(() => {
    const b = obj(body, 'body');
    if (b['n'] !== undefined && b['n'] !== null && b['n'] !== 1) throw new FieldError('n', 'n must be 1');
    const messages = arr(b['messages'], 'messages', 1, MESSAGES_MAX).map((m, i) => messageIn(m, `messages[${i}]`));
    const tools = b['tools'] === undefined ? undefined : toolsIn(b['tools']);
    const toolChoice = toolChoiceIn(b['tool_choice']);
    const maxTokens = int(b['max_completion_tokens'] ?? b['max_tokens'], 'max_tokens', 1, 1_000_000);
    const stop = stopList(b['stop'], 'stop');
    const temperature = num(b['temperature'], 'temperature', 0, 2);
    const topP = num(b['top_p'], 'top_p', 0, 1);
    const passthrough = unknownFields(b, KNOWN);
    return {
      model: str(b['model'], 'model', 256),
      messages,
      ...(tools ? { tools } : {}),
      ...(toolChoice ? { tool_choice: toolChoice } : {}),
      ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
      sampling: {
        ...(temperature === undefined ? {} : { temperature }),
        ...(topP === undefined ? {} : { top_p: topP }),
        ...(stop ? { stop } : {}),
      },
      stream: bool(b['stream'], 'stream') ?? false,
      ...(passthrough ? { passthrough: { dialect: 'openai' as const, fields: passthrough } } : {}),
    };
  });
}

/** Whether the caller asked for the usage chunk at the end of a stream. */
export function openAiIncludeUsage(body: JsonObject): boolean {
  const options = body['stream_options'];
  return isObject(options) && options['include_usage'] === true;
}

function messageIn(value: unknown, field: string): NeutralMessage {
  const m = obj(value, field);
  const role = m['role'];
  switch (role) {
    case 'system':
    case 'developer':
      return { role: 'system', parts: contentIn(m['content'], `${field}.content`) };
    case 'user':
      return { role: 'user', parts: contentIn(m['content'], `${field}.content`) };
    case 'assistant': {
      const text =
        m['content'] === undefined || m['content'] === null ? [] : contentIn(m['content'], `${field}.content`);
      const calls =
        m['tool_calls'] === undefined || m['tool_calls'] === null
          ? []
          : arr(m['tool_calls'], `${field}.tool_calls`, 0, TOOLS_MAX).map((c, i) =>
              toolCallIn(c, `${field}.tool_calls[${i}]`),
            );
      return { role: 'assistant', parts: [...text, ...calls] };
    }
    case 'tool': {
      const content = contentIn(m['content'], `${field}.content`);
      const result: Part = {
        type: 'tool_result',
        tool_call_id: str(m['tool_call_id'], `${field}.tool_call_id`, 256),
        content: textOf(content as { type: string; text?: string }[]),
      };
      return { role: 'tool', parts: [result] };
    }
    default:
      throw new FieldError(`${field}.role`, `${field}.role must be system, developer, user, assistant or tool`);
  }
}

function contentIn(value: unknown, field: string): Part[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  return arr(value, field, 0, 1_000).map((p, i) => partIn(p, `${field}[${i}]`));
}

function partIn(value: unknown, field: string): Part {
  const p = obj(value, field);
  if (p['type'] === 'text') return { type: 'text', text: str(p['text'], `${field}.text`) };
  if (p['type'] === 'image_url') {
    const image = obj(p['image_url'], `${field}.image_url`);
    const url = str(image['url'], `${field}.image_url.url`, 20_000_000);
    const detail = detailIn(image['detail'], `${field}.image_url.detail`);
    const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
    const source = data ? { media_type: data[1]!, data: data[2]! } : { url };
    return { type: 'image', ...source, ...(detail === undefined ? {} : { detail }) };
  }
  return { type: 'raw', dialect: 'openai', value: p };
}

function detailIn(value: unknown, field: string): 'low' | 'high' | 'auto' | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'low' || value === 'high' || value === 'auto') return value;
  throw new FieldError(field, `${field} must be low, high or auto`);
}

function toolCallIn(value: unknown, field: string): Part {
  const c = obj(value, field);
  const fn = obj(c['function'], `${field}.function`);
  return {
    type: 'tool_call',
    id: str(c['id'], `${field}.id`, 256),
    name: str(fn['name'], `${field}.function.name`, 256),
    arguments: str(fn['arguments'] ?? '', `${field}.function.arguments`),
  };
}

function toolsIn(value: unknown): ToolDefinition[] {
  return arr(value, 'tools', 0, TOOLS_MAX).map((t, i) => {
    const tool = obj(t, `tools[${i}]`);
    if (tool['type'] !== 'function') throw new FieldError(`tools[${i}].type`, `tools[${i}].type must be function`);
    const fn = obj(tool['function'], `tools[${i}].function`);
    const description = optStr(fn['description'], `tools[${i}].function.description`, 100_000);
    return {
      name: str(fn['name'], `tools[${i}].function.name`, 256),
      ...(description === undefined ? {} : { description }),
      parameters:
        fn['parameters'] === undefined ? { type: 'object' } : obj(fn['parameters'], `tools[${i}].function.parameters`),
    };
  });
}

function toolChoiceIn(value: unknown): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'auto' || value === 'none' || value === 'required') return { type: value };
  const c = obj(value, 'tool_choice');
  const fn = obj(c['function'], 'tool_choice.function');
  return { type: 'tool', name: str(fn['name'], 'tool_choice.function.name', 256) };
}

// ---- out: the body for an OpenAI-kind provider (always streamed, with usage).

export function openAiRequestOut(req: NeutralRequest, model: string, maxTokens: number): JsonObject {
  const body: JsonObject = {
    ...(req.passthrough?.dialect === 'openai' ? req.passthrough.fields : {}),
    model,
    messages: req.messages.flatMap(messageOut),
    max_tokens: maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (req.tools && req.tools.length > 0) body['tools'] = req.tools.map(toolOut);
  if (req.tool_choice) body['tool_choice'] = toolChoiceOut(req.tool_choice);
  if (req.sampling.temperature !== undefined) body['temperature'] = req.sampling.temperature;
  if (req.sampling.top_p !== undefined) body['top_p'] = req.sampling.top_p;
  if (req.sampling.stop && req.sampling.stop.length > 0) body['stop'] = req.sampling.stop;
  return body;
}

function messageOut(m: NeutralMessage): JsonObject[] {
  if (m.role === 'tool' || m.parts.some((p) => p.type === 'tool_result')) {
    // Each result is its own `tool` message on OpenAI's wire; other parts follow as a user message.
    const results = m.parts.flatMap((p) =>
      p.type === 'tool_result' ? [{ role: 'tool', tool_call_id: p.tool_call_id, content: p.content }] : [],
    );
    const rest = m.parts.filter((p) => p.type !== 'tool_result');
    return rest.length > 0 ? [...results, ...messageOut({ role: 'user', parts: rest })] : results;
  }
  if (m.role === 'assistant') {
    const calls = m.parts.flatMap((p) =>
      p.type === 'tool_call'
        ? [{ id: p.id, type: 'function', function: { name: p.name, arguments: p.arguments } }]
        : [],
    );
    const text = textOf(m.parts as { type: string; text?: string }[]);
    return [
      {
        role: 'assistant',
        content: text === '' && calls.length > 0 ? null : text,
        ...(calls.length ? { tool_calls: calls } : {}),
      },
    ];
  }
  return [{ role: m.role, content: contentOut(m.parts) }];
}

/** Plain text stays a string (what every OpenAI-compatible server accepts); anything richer is a list of parts. */
function contentOut(parts: readonly Part[]): string | JsonObject[] {
  if (parts.every((p) => p.type === 'text')) return textOf(parts as { type: string; text?: string }[]);
  return parts.flatMap((p): JsonObject[] => {
    if (p.type === 'text') return [{ type: 'text', text: p.text }];
    if (p.type === 'image') {
      const url = p.url ?? `data:${p.media_type};base64,${p.data}`;
      return [{ type: 'image_url', image_url: { url, ...(p.detail === undefined ? {} : { detail: p.detail }) } }];
    }
    if (p.type === 'raw' && p.dialect === 'openai') return [p.value];
    return []; // A part only the other dialect knows cannot be expressed here.
  });
}

function toolOut(t: ToolDefinition): JsonObject {
  return {
    type: 'function',
    function: {
      name: t.name,
      ...(t.description === undefined ? {} : { description: t.description }),
      parameters: t.parameters,
    },
  };
}

function toolChoiceOut(c: ToolChoice): unknown {
  return c.type === 'tool' ? { type: 'function', function: { name: c.name } } : c.type;
}
