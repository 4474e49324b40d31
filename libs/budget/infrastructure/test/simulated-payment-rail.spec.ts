// Proves the simulated payment rail answers every configured outcome, per reference or globally, and counts its calls.
import { describe, expect, it } from '@jest/globals';
import { SimulatedPaymentRail } from '../src/index.js';

const auth = (reference: string) => ({ reference, hold_id: `h-${reference}`, amount_units: 100n, currency: 'USD' });

describe('simulated payment rail', () => {
  it('approves by default and reports the settlement state of a reference', async () => {
    const rail = new SimulatedPaymentRail({ mode: 'reversible_hold' });
    expect(await rail.authorize(auth('r1'))).toEqual({
      outcome: 'authorized',
      authorization_id: 'auth_r1',
      mode: 'reversible_hold',
    });
    expect(await rail.settlementState('r1')).toMatchObject({ state: 'authorized' });
    expect(await rail.release({ authorization_id: 'auth_r1', reference: 'r1' })).toMatchObject({ outcome: 'released' });
    expect(await rail.settlementState('r2')).toEqual({ state: 'none' });
    expect(rail.counters).toMatchObject({ authorize: 1, release: 1, settlementState: 2 });
  });

  it('B3 declines, insufficient funds, unavailability and lost acknowledgements are configurable per reference', async () => {
    const rail = new SimulatedPaymentRail({ mode: 'reversible_hold' });
    rail.configureReference('d', { authorize: 'decline' });
    rail.configureReference('i', { authorize: 'insufficient_funds' });
    rail.configureReference('u', { authorize: 'unavailable' });
    rail.configureReference('e', { authorize: 'rail_error_after_commit' });
    expect((await rail.authorize(auth('d'))).outcome).toBe('declined');
    expect((await rail.authorize(auth('i'))).outcome).toBe('insufficient_funds');
    expect((await rail.authorize(auth('u'))).outcome).toBe('unavailable');
    expect((await rail.authorize(auth('e'))).outcome).toBe('rail_error');
    expect(await rail.settlementState('e')).toMatchObject({ state: 'authorized' });
  });

  it('B9 a pending or failed release is reported as such', async () => {
    const rail = new SimulatedPaymentRail({ mode: 'reversible_hold', behaviour: { release: 'pending' } });
    expect(await rail.release({ authorization_id: 'a', reference: 'r' })).toEqual({
      outcome: 'pending',
      rail_reference: 'release_pending_reference',
    });
    rail.configure({ release: 'fail' });
    expect((await rail.release({ authorization_id: 'a', reference: 'r' })).outcome).toBe('failed');
  });

  it('B8 block_until_released holds authorizations until released', async () => {
    const rail = new SimulatedPaymentRail({
      mode: 'reversible_hold',
      behaviour: { authorize: 'block_until_released' },
    });
    let done = false;
    const pending = rail.authorize(auth('b')).then((r) => ((done = true), r));
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toBe(false);
    rail.releaseBlockedAuthorizations();
    expect((await pending).outcome).toBe('authorized');
  });
});
