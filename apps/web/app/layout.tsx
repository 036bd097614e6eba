import type { Metadata, Viewport } from 'next';
import type { ReactNode } from 'react';
import { Providers } from './providers.tsx';
import './globals.css';

export const metadata: Metadata = {
  title: 'Once — exactly-once checkout',
  description: 'A checkout that charges exactly once over an unreliable network.',
};

export const viewport: Viewport = {
  width: 'device-width',
  initialScale: 1,
  themeColor: '#4338ca',
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <a className="skip-link" href="#content">
          Skip to content
        </a>
        <header className="topbar">
          <a className="brand" href="/">
            <span className="brand-mark" aria-hidden="true">
              1×
            </span>
            <span className="brand-name">Once</span>
          </a>
          <nav className="nav" aria-label="Main">
            <a href="/">Checkout</a>
            <a href="/ops">Operator cockpit</a>
          </nav>
        </header>
        <div id="content" className="content">
          <Providers>{children}</Providers>
        </div>
      </body>
    </html>
  );
}
