// The models the drop-in endpoints offer: every configured (provider, model), named
// `<provider>/<model>`; a bare model name resolves when exactly one provider offers it.
import type { NeutralError } from '@tally/orchestrator-dialects';
import type { RouteLeg } from '@tally/orchestrator-domain';

export interface CatalogProvider {
  readonly name: string;
  readonly models: Readonly<Record<string, unknown>>;
}

/** Fallback legs a caller may name in x-tally-fallbacks (the route ladder holds at most 8 legs on the wire). */
export const FALLBACKS_MAX = 7;

export class ModelCatalog {
  private readonly byBare = new Map<string, RouteLeg[]>();
  private readonly legs: RouteLeg[] = [];

  constructor(providers: readonly CatalogProvider[]) {
    for (const p of providers)
      for (const model of Object.keys(p.models)) {
        const leg = { provider: p.name, model };
        this.legs.push(leg);
        this.byBare.set(model, [...(this.byBare.get(model) ?? []), leg]);
      }
  }

  /** OpenAI's list shape. */
  list(): { object: 'list'; data: { id: string; object: 'model'; created: number; owned_by: string }[] } {
    return {
      object: 'list',
      data: this.legs.map((l) => ({
        id: `${l.provider}/${l.model}`,
        object: 'model',
        created: 0,
        owned_by: l.provider,
      })),
    };
  }

  resolve(name: string): RouteLeg | undefined {
    const exact = this.legs.find((l) => `${l.provider}/${l.model}` === name);
    if (exact) return exact;
    const bare = this.byBare.get(name);
    return bare && bare.length === 1 ? bare[0] : undefined;
  }

  /** The route ladder: the requested model, then each fallback leg in order. */
  route(
    model: string,
    fallbacks: string | undefined,
  ): { ok: true; route: RouteLeg[] } | { ok: false; error: NeutralError } {
    const first = this.resolve(model);
    if (!first)
      return {
        ok: false,
        error: {
          kind: 'not_found',
          code: 'model_not_found',
          field: 'model',
          message: `The model ${model} does not exist here (or more than one provider offers it): name it <provider>/<model>, see GET /v1/models`,
        },
      };
    const names = (fallbacks ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (names.length > FALLBACKS_MAX)
      return {
        ok: false,
        error: {
          kind: 'invalid_request',
          field: 'x-tally-fallbacks',
          message: `x-tally-fallbacks names at most ${FALLBACKS_MAX} legs`,
        },
      };
    const route = [first];
    for (const name of names) {
      const leg = this.resolve(name);
      if (!leg)
        return {
          ok: false,
          error: {
            kind: 'invalid_request',
            field: 'x-tally-fallbacks',
            message: `x-tally-fallbacks: unknown model ${name}`,
          },
        };
      route.push(leg);
    }
    return { ok: true, route };
  }
}
