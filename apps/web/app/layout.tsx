import type { Metadata } from 'next';
import type { ReactNode } from 'react';
import { Providers } from './providers.tsx';
import './globals.css';

export const metadata: Metadata = {
  title: 'Once — exactly-once checkout',
  description: 'A checkout that charges exactly once over an unreliable network.',
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <nav className="nav">
          <a href="/">Checkout</a>
          <a href="/ops">Operator cockpit</a>
        </nav>
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
