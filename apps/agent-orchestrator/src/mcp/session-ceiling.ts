// A dispatch ceiling for one MCP session (issue 10 item 5, O2): the client sets it with the
// `x-tally-dispatch-ceiling` header on the request that opens the session, and every tool
// call of the session takes one dispatch from it before it is submitted. A call that ends
// without reaching the tool server (refused by the budget, or by its own validation) gives
// its dispatch back; one still undecided keeps it, so the ceiling fails closed. The session
// lives in the replica that opened it (the transport's state is in memory), so the count
// is exact without coordination.

export const DISPATCH_CEILING_HEADER = 'x-tally-dispatch-ceiling';
/** The largest ceiling a session may ask for. */
export const SESSION_CEILING_MAX = 1_000_000;

export class SessionCeiling {
  private taken = 0;

  constructor(readonly max: number) {}

  /** One dispatch from the ceiling, or false when every one is taken. */
  take(): boolean {
    if (this.taken >= this.max) return false;
    this.taken++;
    return true;
  }

  giveBack(): void {
    if (this.taken > 0) this.taken--;
  }
}

/** The ceiling a request asks for: none, a ceiling, or the reason the header is invalid. */
export function ceilingOf(header: string | string[] | undefined): SessionCeiling | undefined | { invalid: string } {
  if (header === undefined) return undefined;
  const value = Array.isArray(header) ? header.join(',') : header;
  if (!/^[0-9]{1,7}$/.test(value) || Number(value) < 1 || Number(value) > SESSION_CEILING_MAX)
    return { invalid: `${DISPATCH_CEILING_HEADER} must be an integer from 1 to ${SESSION_CEILING_MAX}` };
  return new SessionCeiling(Number(value));
}
