/** A duration as written: a positive count and a unit (s, m, h, d). */
export const DURATION = /^([1-9]\d{0,5})([smhd])$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `90s`, `15m`, `12h`, `30d` → milliseconds, or null when malformed. */
export function parseDuration(text: string): number | null {
  const m = DURATION.exec(text);
  if (!m) return null;
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}
