/**
 * The one way the web app writes a moment: "16:49:46", "26 Nov 16:49:46" or "3 Jan 2027
 * 09:00:00", in English whatever the browser's locale, so every table reads the same.
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
