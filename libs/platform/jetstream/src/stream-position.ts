// Where a stream stands on the server, for a read that must see a write made through another
// replica (ADR 0048): the last sequence of one subject, and the stream's last sequence asked
// after the caller arrived. Both are JetStream API requests, which the stream leader answers;
// a direct get may be served by a follower that is behind, so neither uses one.
import { JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';

const NO_MESSAGE_FOUND = 10037;

/** The subject's last stream sequence, 0 when the subject has no message. */
export async function subjectLastSequence(jsm: JetStreamManager, stream: string, subject: string): Promise<number> {
  try {
    return (await jsm.streams.getMessage(stream, { last_by_subj: subject }))?.seq ?? 0;
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === NO_MESSAGE_FOUND) return 0;
    throw error;
  }
}

/**
 * The stream's last sequence for callers who cannot name a subject (an unknown operator key
 * names no tenant). A question already in flight may have been answered before a new caller's
 * write, so a new caller never joins it: it joins the one question queued behind it, which
 * leaves once the first returns. However many callers arrive, at most one question is in
 * flight, so a burst of unknown keys costs the server one request at a time.
 */
export class StreamEnd {
  private inFlight: Promise<number> | undefined;
  private queued: Promise<number> | undefined;

  constructor(
    private readonly jsm: JetStreamManager,
    private readonly stream: string,
  ) {}

  /** The stream's last sequence, from a question sent after this call. */
  afterNow(): Promise<number> {
    if (this.queued) return this.queued;
    const ahead = this.inFlight;
    if (!ahead) return this.ask();
    const settled = () => undefined;
    this.queued = ahead.then(settled, settled).then(() => {
      this.queued = undefined;
      return this.ask();
    });
    return this.queued;
  }

  private ask(): Promise<number> {
    const asked = this.jsm.streams.info(this.stream).then((info) => info.state.last_seq);
    this.inFlight = asked;
    const done = () => {
      if (this.inFlight === asked) this.inFlight = undefined;
    };
    asked.then(done, done);
    return asked;
  }
}
