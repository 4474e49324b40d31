// The express response behind a drop-in answer. The connection's close before the answer is
// finished is the caller going away, which aborts its unit.
import type { DialectErrorResponse } from '@tally/orchestrator-dialects';
import type { Response } from './express-response.js';
import type { HttpExchange } from './drop-in-answer.js';
import { sendDialectError } from './dialect-exception.filter.js';

export function httpExchange(res: Response): HttpExchange {
  let gone = false;
  const listeners: (() => void)[] = [];
  res.once('close', () => {
    if (res.writableFinished) return;
    gone = true;
    for (const listener of listeners) listener();
  });
  return {
    header: (name, value) => void res.setHeader(name, value),
    json: (status, body) => void res.status(status).json(body),
    error: (response: DialectErrorResponse) => sendDialectError(res, response),
    startStream: () => {
      res
        .status(200)
        .set({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      res.flushHeaders();
      res.socket?.setNoDelay(true);
    },
    write: (chunk) => void res.write(chunk),
    end: () => void res.end(),
    get gone() {
      return gone;
    },
    onGone: (listener) => void listeners.push(listener),
  };
}
