export const dynamic = 'force-dynamic';

export default function HomePage() {
  return (
    <main>
      <h1>Once</h1>
      <p className="muted">A checkout that charges exactly once over an unreliable network.</p>
      <div className="card">
        <p>
          Health: <a href="/api/health">/api/health</a>
        </p>
      </div>
    </main>
  );
}
