// The provider settings the gateway is built from. They mirror the `providers` section of the
// Tally config (http-api.md), which the platform config loader validates at boot; the shapes
// are structural so this library does not depend on the loader.

export type ProviderKind = 'openai' | 'anthropic';

/** Price per million tokens in the currency's cost units (integers, as in the config file). */
export interface ModelPrice {
  input_per_mtok_units: number;
  output_per_mtok_units: number;
  currency: string;
}

export interface ProviderSettings {
  name: string;
  kind: ProviderKind;
  /** For example `https://api.openai.com/v1`; the client appends `/chat/completions` or `/messages`. */
  base_url: string;
  /** Name of the environment variable that holds the API key. */
  api_key_env: string;
  models: Record<string, ModelPrice>;
}
