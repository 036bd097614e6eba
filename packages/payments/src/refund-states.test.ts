import { describe, expect, it } from 'vitest';
import { canRecordRefund, refundStatusesRecordableAs } from './refund-states.ts';

describe('refund lifecycle', () => {
  it('a succeeded refund may still fail (Stripe returns the money), never the reverse', () => {
    expect(canRecordRefund('succeeded', 'failed')).toBe(true);
    expect(canRecordRefund('failed', 'succeeded')).toBe(false);
    expect(canRecordRefund('failed', 'pending')).toBe(false);
    expect(canRecordRefund('succeeded', 'pending')).toBe(false);
  });

  it('a final answer is never overwritten by a doubt or a late pending', () => {
    expect(canRecordRefund('succeeded', 'unknown')).toBe(false);
    expect(canRecordRefund('failed', 'unknown')).toBe(false);
    expect(canRecordRefund('pending', 'pending')).toBe(true);
    expect(canRecordRefund('failed', 'failed')).toBe(false);
  });

  it('the SQL guard lists exactly the statuses that may be recorded as the target', () => {
    expect(refundStatusesRecordableAs('succeeded').sort()).toEqual([
      'pending',
      'requested',
      'unknown',
    ]);
    expect(refundStatusesRecordableAs('failed').sort()).toEqual([
      'pending',
      'requested',
      'succeeded',
      'unknown',
    ]);
    expect(refundStatusesRecordableAs('pending').sort()).toEqual([
      'pending',
      'requested',
      'unknown',
    ]);
  });
});
