/**
 * The one way the web app writes a moment: local 24-hour time to the second, with the day
 * in front when it is not today, e.g. "16:49:46", "26 Nov 16:49:46" or "3 Jan 2027 09:00:00". English month names
 * whatever the browser's locale, so every table of the cockpit reads the same.
 *
 * @example
 * formatTimestamp('2026-11-25T16:49:46Z', Date.parse('2026-11-25T17:00:00Z')) // '16:49:46' (UTC)
 */
export function formatTimestamp(iso: string, now: number = Date.now()): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const time = timeFormat.format(at);
  const today = new Date(now);
  if (sameLocalDay(at, today)) return time;
  const day = at.getFullYear() === today.getFullYear() ? dayFormat : yearFormat;
  return `${day.format(at)} ${time}`;
}

const timeFormat = new Intl.DateTimeFormat('en-GB', {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
});

const dayFormat = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short' });
const yearFormat = new Intl.DateTimeFormat('en-GB', {
  day: 'numeric',
  month: 'short',
  year: 'numeric',
});

function sameLocalDay(a: Date, b: Date): boolean {
  return (
    a.getFullYear() === b.getFullYear() &&
    a.getMonth() === b.getMonth() &&
    a.getDate() === b.getDate()
  );
}
