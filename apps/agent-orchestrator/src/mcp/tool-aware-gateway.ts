// One gateway and one price table for the dispatch workers: tool servers by name, LLM
// providers for everything else.
import type {
  DispatchDelta,
  DispatchOutcome,
  DispatchRequest,
  ModelPrice,
  PriceTable,
  ProviderGateway,
} from '@tally/orchestrator-application';
import type { ToolServers } from './tool-servers.js';

export class ToolAwareGateway implements ProviderGateway, PriceTable {
  constructor(
    private readonly providers: ProviderGateway & PriceTable,
    private readonly tools: ToolServers,
  ) {}

  priceOf(provider: string, model: string): ModelPrice | undefined {
    return this.tools.has(provider) ? this.tools.priceOf(provider, model) : this.providers.priceOf(provider, model);
  }

  dispatch(
    req: DispatchRequest,
    signal: AbortSignal,
    onProgress?: () => void,
    onDelta?: (d: DispatchDelta) => void,
  ): Promise<DispatchOutcome> {
    return this.tools.has(req.provider)
      ? this.tools.dispatch(req, signal)
      : this.providers.dispatch(req, signal, onProgress, onDelta);
  }
}
