'use client';

import type { RouterOutputs } from '@once/api';
import { formatMoney } from '../format/money.ts';

type Product = RouterOutputs['catalogue']['list'][number];

export type CartQuantities = Record<string, number>;

/** The catalogue with a quantity per product; prices shown are the server's. */
export function CartEditor(props: {
  products: readonly Product[];
  quantities: CartQuantities;
  onChange: (next: CartQuantities) => void;
  locked: boolean;
}) {
  const { products, quantities, onChange, locked } = props;
  const total = products.reduce((sum, p) => sum + p.unitAmount * (quantities[p.productId] ?? 0), 0);
  const currency = products[0]?.currency ?? 'usd';
  return (
    <section className="card" aria-labelledby="cart-heading">
      <h2 id="cart-heading">Cart</h2>
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Product</th>
            <th scope="col">Price</th>
            <th scope="col">Quantity</th>
          </tr>
        </thead>
        <tbody>
          {products.map((product) => (
            <tr key={product.productId} data-testid={`product-${product.productId}`}>
              <td>{product.name}</td>
              <td>{formatMoney(product.unitAmount, product.currency)}</td>
              <td>
                <input
                  type="number"
                  min={0}
                  max={99}
                  aria-label={`Quantity of ${product.name}`}
                  data-testid={`quantity-${product.productId}`}
                  value={quantities[product.productId] ?? 0}
                  disabled={locked}
                  onChange={(event) => {
                    const quantity = Math.max(
                      0,
                      Math.min(99, Math.trunc(Number(event.target.value) || 0)),
                    );
                    onChange({ ...quantities, [product.productId]: quantity });
                  }}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p>
        Total: <strong data-testid="cart-total">{formatMoney(total, currency)}</strong>
      </p>
    </section>
  );
}
