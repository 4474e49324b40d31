// The parts of express's response the drop-in endpoints use (express ships no types here).
import type { ServerResponse } from 'node:http';

export interface Response extends ServerResponse {
  status(code: number): this;
  set(headers: Record<string, string>): this;
  json(body: unknown): this;
}
