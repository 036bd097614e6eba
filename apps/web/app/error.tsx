'use client';

import { useRouter } from 'next/navigation';
import { startTransition } from 'react';

// What a page shows when its server render failed (the database unreachable before this web
// process ever read the merchants, say). Plain words only: the server's message stays in its log.
export default function PageError({ reset }: { error: Error; reset: () => void }) {
  const router = useRouter();
  // A server render is only tried again after a refresh; reset alone would re-show the error.
  const tryAgain = () =>
    startTransition(() => {
      router.refresh();
      reset();
    });
  return (
    <main>
      <div className="page-head">
        <h1>Temporarily unavailable</h1>
        <p className="lede" role="alert">
          The store cannot be reached right now. Nothing was charged; try again in a moment.
        </p>
      </div>
      <button type="button" className="primary" onClick={tryAgain}>
        Try again
      </button>
    </main>
  );
}
