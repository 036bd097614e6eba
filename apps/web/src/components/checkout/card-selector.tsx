'use client';

import { TEST_CARDS } from '../../client/test-cards.ts';

/** Stripe test cards as radio buttons; the mock processor answers as Stripe would. */
export function CardSelector(props: {
  paymentMethod: string;
  onChange: (paymentMethod: string) => void;
  locked: boolean;
}) {
  return (
    <fieldset className="card cards" disabled={props.locked}>
      <legend className="card-title">Test card</legend>
      {TEST_CARDS.map((card) => (
        <label key={card.paymentMethod} className="radio card-option">
          <input
            type="radio"
            name="test-card"
            value={card.paymentMethod}
            data-testid={`card-${card.number.replaceAll(' ', '')}`}
            checked={props.paymentMethod === card.paymentMethod}
            onChange={() => props.onChange(card.paymentMethod)}
          />
          <span className="card-option-text">
            <code className="card-number">{card.number}</code>
            <span>
              {card.label} <span className="muted">· {card.expected}</span>
            </span>
          </span>
        </label>
      ))}
    </fieldset>
  );
}
