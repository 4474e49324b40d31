// What each configured model makes of a prompt, for its hold (ADR 0042): its provider's chat
// format and image formula, whether it takes images, and its published encoding when the
// configuration names one. Built once at boot; the encodings are loaded only if named.
import type { PromptProfiles } from '@tally/orchestrator-application';
import type { PromptProfile } from '@tally/orchestrator-domain';
import { loadTokenCounters, type TokenCount, type TokenEncoding } from '@tally/orchestrator-providers';
import type { TallyConfig } from '@tally/platform-app';

export class ConfiguredPromptProfiles implements PromptProfiles {
  private readonly profiles = new Map<string, PromptProfile>();

  /** Without counters (the drop-in endpoints' check before submitting) no text is tokenized. */
  constructor(
    providers: TallyConfig['providers'],
    counters: ReadonlyMap<TokenEncoding, TokenCount> = new Map(),
    tokenizeBytesMax = 0,
  ) {
    for (const provider of providers)
      for (const [model, settings] of Object.entries(provider.models)) {
        const count = settings.encoding === undefined ? undefined : counters.get(settings.encoding);
        this.profiles.set(key(provider.name, model), {
          kind: provider.kind,
          accepts_images: settings.accepts_images ?? true,
          ...(settings.image_tokens_max === undefined ? {} : { image_tokens_max: settings.image_tokens_max }),
          ...(count === undefined || tokenizeBytesMax === 0
            ? {}
            : { tokenizer: { count, bytes_max: tokenizeBytesMax } }),
        });
      }
  }

  profileOf(provider: string, model: string): PromptProfile | undefined {
    return this.profiles.get(key(provider, model));
  }
}

/** The dispatch workers' profiles: the encodings the configuration names are loaded first. */
export async function promptProfilesOf(config: TallyConfig): Promise<ConfiguredPromptProfiles> {
  const bytesMax = config.orchestrator.prompt_tokenize_bytes_max;
  const named = config.providers.flatMap((p) => Object.values(p.models).flatMap((m) => m.encoding ?? []));
  const counters = bytesMax === 0 ? new Map() : await loadTokenCounters(named);
  return new ConfiguredPromptProfiles(config.providers, counters, bytesMax);
}

function key(provider: string, model: string): string {
  return `${provider}\n${model}`;
}
