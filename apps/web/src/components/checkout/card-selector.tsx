'use client';

import { TEST_CARDS } from '../../client/test-cards.ts';

/** Stripe test cards as radio buttons; the mock processor answers as Stripe would. */
export function CardSelector(props: {
  paymentMethod: string;
  onChange: (paymentMethod: string) => void;
  locked: boolean;
}) {
  return (
    <fieldset className="card" disabled={props.locked}>
      <legend>Test card</legend>
      {TEST_CARDS.map((card) => (
        <label key={card.paymentMethod} className="radio">
          <input
            type="radio"
            name="test-card"
            value={card.paymentMethod}
            data-testid={`card-${card.number.replaceAll(' ', '')}`}
            checked={props.paymentMethod === card.paymentMethod}
            onChange={() => props.onChange(card.paymentMethod)}
          />
          <code>{card.number}</code> {card.label} <span className="muted">({card.expected})</span>
        </label>
      ))}
    </fieldset>
  );
}
