/**
 * Holds a handler in flight until the test releases it, so a duplicate request meets a live
 * lease (409) deterministically, without sleeps. Shared by the consumer apps.
 */
const gates = new Map();

function gate(id) {
  let entry = gates.get(id);
  if (!entry) {
    let release;
    const released = new Promise((resolve) => {
      release = resolve;
    });
    entry = { entered: false, released, release };
    gates.set(id, entry);
  }
  return entry;
}

/** Called by a handler: marks `id` entered, resolves once the test releases it. */
export function holdAt(id) {
  const entry = gate(id);
  entry.entered = true;
  return entry.released;
}

/** Answers the test's `/test/gate?id=...&release=1` (release) or `?id=...` (entered yet?). */
export function answerGate(url) {
  const id = url.searchParams.get('id') ?? '';
  const entry = gate(id);
  if (url.searchParams.get('release') === '1') entry.release();
  return Response.json({ entered: entry.entered });
}
