// Incremental Server-Sent Events parser (WHATWG "event stream interpretation"). Providers
// stream over TCP, so a chunk may end anywhere: inside a UTF-8 sequence, inside a line, or
// between the CR and LF of a CRLF. The parser keeps only the unfinished line and the current
// event, and both are bounded so a misbehaving server cannot grow memory without limit.

export interface SseEvent {
  /** The `event:` field, or 'message' when absent. */
  event: string;
  /** The `data:` lines joined with '\n'. */
  data: string;
  id?: string;
}

export interface SseParserOptions {
  /** Upper bound on one event (its data plus the pending line), in UTF-16 code units. */
  eventMaxChars: number;
}

/** The stream broke the parser's bounds; callers classify it as an unparseable response. */
export class SseOverflowError extends Error {
  constructor(limitChars: number) {
    super(`SSE event exceeded ${limitChars} characters`);
    this.name = 'SseOverflowError';
  }
}

export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private line = '';
  /** True when the previous chunk ended in CR, so a leading LF belongs to that line break. */
  private pendingCr = false;
  private eventName = '';
  private dataLines: string[] = [];
  private dataChars = 0;
  private lastId: string | undefined;

  constructor(private readonly options: SseParserOptions) {
    if (!(options.eventMaxChars > 0)) throw new Error('SseParser: eventMaxChars must be positive');
  }

  /** Feeds raw bytes (or already-decoded text) and returns the events completed by them. */
  push(chunk: Uint8Array | string): SseEvent[] {
    const text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    return this.scan(text);
  }

  /** Flushes at end of stream. Per the SSE rules an event without a final blank line is dropped. */
  end(): SseEvent[] {
    const events = this.scan(this.decoder.decode());
    this.line = '';
    this.resetEvent();
    return events;
  }

  private scan(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    let start = 0;
    if (this.pendingCr && text.startsWith('\n')) start = 1;
    this.pendingCr = false;
    for (let i = start; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line += text.slice(start, i);
      this.completeLine(events);
      if (c === 13) {
        if (i + 1 === text.length) this.pendingCr = true;
        else if (text.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.line += text.slice(start);
    this.checkBounds();
    return events;
  }

  private completeLine(events: SseEvent[]): void {
    const line = this.line;
    this.line = '';
    if (line === '') {
      this.dispatch(events);
      return;
    }
    if (line.startsWith(':')) return; // A comment: providers send these as heartbeats.
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    this.applyField(field, value);
  }

  private applyField(field: string, value: string): void {
    if (field === 'data') {
      this.dataLines.push(value);
      this.dataChars += value.length + 1;
      this.checkBounds();
    } else if (field === 'event') {
      this.eventName = value;
    } else if (field === 'id' && !value.includes('\0')) {
      this.lastId = value;
    }
    // 'retry' and unknown fields are ignored: reconnection is the caller's decision.
  }

  private dispatch(events: SseEvent[]): void {
    if (this.dataLines.length > 0) {
      const event: SseEvent = { event: this.eventName || 'message', data: this.dataLines.join('\n') };
      if (this.lastId !== undefined) event.id = this.lastId;
      events.push(event);
    }
    this.resetEvent();
  }

  private resetEvent(): void {
    this.eventName = '';
    this.dataLines = [];
    this.dataChars = 0;
  }

  private checkBounds(): void {
    if (this.line.length + this.dataChars > this.options.eventMaxChars) {
      throw new SseOverflowError(this.options.eventMaxChars);
    }
  }
}
