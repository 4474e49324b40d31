// A command whose write met a full stream gets a final, named refusal (`stream_full`)
// instead of being retried as an unknown failure: nothing was stored, and saying so is the
// clear answer ADR 0002 promises for a full ledger.
import { RpcException } from '@nestjs/microservices';
import { StreamFull } from '@tally/eventing';

export async function refuseWhenFull<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof StreamFull) throw new RpcException({ type: 'stream_full', message: error.message });
    throw error;
  }
}
