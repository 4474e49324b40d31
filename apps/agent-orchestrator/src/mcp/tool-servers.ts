// The client side of MCP: the configured tool servers as one more kind of paid dispatch. A
// tool call is a work unit whose route leg is (server, tool), priced per call, dispatched by a
// worker through the official SDK's Streamable HTTP client with the server's own headers
// (from headers_env: the agent's token never reaches a tool server), cut off at the server's
// timeout. Whatever the tool answers, an error result included, was executed and is charged.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { DispatchDelta, DispatchOutcome, DispatchRequest, ModelPrice } from '@tally/orchestrator-application';
import type { ToolServerConfig } from '@tally/platform-app';

export interface ToolDescription {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema: Record<string, unknown>;
}

interface ServerEntry {
  readonly config: ToolServerConfig;
  readonly headers: Record<string, string>;
  client?: Promise<Client>;
}

/** Tools listed per server are cached this long: a listing is not a paid call, but it is a round trip. */
const LIST_CACHE_MS = 30_000;

export class ToolServers {
  private readonly servers = new Map<string, ServerEntry>();
  private readonly listed = new Map<string, { at: number; tools: ToolDescription[] }>();

  /** Throws, naming the setting, when a header's variable is unset or a tool has no usable price. */
  constructor(
    configs: readonly ToolServerConfig[],
    env: Readonly<Record<string, string | undefined>>,
    providerNames: readonly string[],
  ) {
    for (const config of configs) {
      const where = `tool_servers["${config.name}"]`;
      if (this.servers.has(config.name) || providerNames.includes(config.name))
        throw new Error(`${where}: the name is already a provider's or another tool server's`);
      const headers: Record<string, string> = {};
      for (const [header, variable] of Object.entries(config.headers_env ?? {})) {
        const value = env[variable];
        if (!value) throw new Error(`${where}.headers_env.${header}: environment variable ${variable} is not set`);
        headers[header] = value;
      }
      for (const [tool, price] of Object.entries(config.tools))
        if (
          !Number.isSafeInteger(price?.cost_units_per_call) ||
          price.cost_units_per_call < 0 ||
          typeof price.currency !== 'string'
        )
          throw new Error(`${where}.tools.${tool}: needs cost_units_per_call (a non-negative integer) and currency`);
      this.servers.set(config.name, { config, headers });
    }
  }

  has(server: string): boolean {
    return this.servers.has(server);
  }

  names(): string[] {
    return [...this.servers.keys()];
  }

  config(server: string): ToolServerConfig | undefined {
    return this.servers.get(server)?.config;
  }

  /** A tool's price per call, as a ModelPrice; undefined when unpriced (never offered, never dispatched). */
  priceOf(server: string, tool: string): ModelPrice | undefined {
    const tools = this.servers.get(server)?.config.tools;
    const price = tools && Object.hasOwn(tools, tool) ? tools[tool] : undefined;
    return price
      ? {
          input_per_mtok_units: 0,
          output_per_mtok_units: 0,
          currency: price.currency,
          per_call_units: price.cost_units_per_call,
        }
      : undefined;
  }

  /** The server's priced tools as it describes them. */
  async tools(server: string): Promise<ToolDescription[]> {
    const entry = this.servers.get(server);
    if (!entry) return [];
    const cached = this.listed.get(server);
    if (cached && Date.now() - cached.at < LIST_CACHE_MS) return cached.tools;
    const client = await this.clientOf(entry);
    const { tools } = await client.listTools(undefined, { timeout: entry.config.timeout_ms });
    const priced = tools
      .filter((t) => Object.hasOwn(entry.config.tools, t.name))
      .map((t) => ({
        name: t.name,
        ...(t.description ? { description: t.description } : {}),
        inputSchema: t.inputSchema as Record<string, unknown>,
      }));
    this.listed.set(server, { at: Date.now(), tools: priced });
    return priced;
  }

  /** One paid tool call: the request's options carry `tool_call: {name, arguments}`. */
  async dispatch(
    req: DispatchRequest,
    signal: AbortSignal,
    _onProgress?: () => void,
    _onDelta?: (d: DispatchDelta) => void,
  ): Promise<DispatchOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const entry = this.servers.get(req.provider);
    const call = (req.options?.['tool_call'] ?? {}) as { name?: string; arguments?: Record<string, unknown> };
    if (!entry || call.name !== req.model)
      return {
        kind: 'error',
        domain: 'request',
        settlement: 'failed',
        error: `unknown tool ${req.provider}/${req.model}; no call made`,
        latency_ms: 0,
      };
    let client: Client;
    try {
      client = await this.clientOf(entry);
    } catch (error) {
      entry.client = undefined;
      return {
        kind: 'error',
        domain: 'network',
        settlement: 'failed',
        error: `tool server unreachable, no call made: ${String(error)}`,
        latency_ms: elapsed(),
      };
    }
    try {
      const result = await client.callTool({ name: req.model, arguments: call.arguments ?? {} }, undefined, {
        signal,
        timeout: req.timeout_ms,
        maxTotalTimeout: req.timeout_ms,
      });
      return {
        kind: 'ok',
        output: JSON.stringify(result),
        usage: { input_tokens: 0, output_tokens: 0 },
        latency_ms: elapsed(),
      };
    } catch (error) {
      if (signal.aborted)
        return {
          kind: 'error',
          domain: 'unknown',
          settlement: 'cancelled',
          error: 'aborted by caller',
          latency_ms: elapsed(),
        };
      const timedOut = /timed out|timeout/i.test(String(error));
      return timedOut
        ? {
            kind: 'error',
            domain: 'deadline',
            settlement: 'unknown',
            error: `tool server did not answer within ${req.timeout_ms} ms`,
            latency_ms: elapsed(),
          }
        : {
            kind: 'error',
            domain: 'unknown',
            settlement: 'unknown',
            error: `tool call failed after it was sent: ${String(error)}`,
            latency_ms: elapsed(),
          };
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers.values()].map(async (e) => (await e.client?.catch(() => undefined))?.close()));
  }

  private clientOf(entry: ServerEntry): Promise<Client> {
    entry.client ??= (async () => {
      const client = new Client({ name: 'tally-orchestrator', version: '1' });
      const transport = new StreamableHTTPClientTransport(new URL(entry.config.url), {
        requestInit: { headers: entry.headers },
      });
      await client.connect(transport, { timeout: entry.config.timeout_ms });
      return client;
    })();
    return entry.client;
  }
}
