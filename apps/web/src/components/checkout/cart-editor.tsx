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
  const items = products.reduce((sum, product) => sum + (quantities[product.productId] ?? 0), 0);
  return (
    <section className="card" aria-labelledby="cart-heading">
      <h2 id="cart-heading" className="card-title">
        Cart
      </h2>
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Product</th>
            <th scope="col" className="num">
              Price
            </th>
            <th scope="col" className="num">
              Quantity
            </th>
          </tr>
        </thead>
        <tbody>
          {products.map((product) => (
            <tr key={product.productId} data-testid={`product-${product.productId}`}>
              <td>{product.name}</td>
              <td className="num">{formatMoney(product.unitAmount, product.currency)}</td>
              <td className="num">
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
      {/* One line either way, so nothing below moves when the first item goes in. */}
      <p className="cart-hint small" data-testid="cart-hint" data-items={items}>
        {items === 0
          ? 'Add an item to pay: set a quantity above.'
          : `${items} item${items === 1 ? '' : 's'} in the cart.`}
      </p>
    </section>
  );
}
