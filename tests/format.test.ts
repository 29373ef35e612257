import { describe, expect, it } from "vitest";
import { formatBytes, formatCount, formatDateTime, formatDecimal, formatDuration, formatPercent, formatQuantity, formatRelative } from "@/lib/format";

// Issue 18: "157460", "1 memories", "verified (1 messages)" — numbers a person reads at a glance.
describe("dashboard number formatting", () => {
  it("groups thousands", () => {
    expect(formatCount(157460)).toBe("157,460");
    expect(formatCount(0)).toBe("0");
  });

  it("says 1 memory, 2 memories, 0 memories", () => {
    expect(formatQuantity(1, "memory", "memories")).toBe("1 memory");
    expect(formatQuantity(2, "memory", "memories")).toBe("2 memories");
    expect(formatQuantity(0, "memory", "memories")).toBe("0 memories");
    expect(formatQuantity(1, "message")).toBe("1 message");
    expect(formatQuantity(12000, "chunk")).toBe("12,000 chunks");
  });

  it("sizes, shares and durations carry their units", () => {
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(5 * 1024 * 1024 * 1024)).toBe("5 GiB");
    expect(formatPercent(0.123)).toBe("12.3%");
    expect(formatPercent(null)).toBe("–");
    expect(formatDuration(0.42)).toBe("0.4 ms");
    expect(formatDuration(35.4)).toBe("35 ms");
    expect(formatDuration(1234)).toBe("1.2 s");
  });

  it("relative times read both ways, absolute times name their zone", () => {
    const now = Date.UTC(2026, 10, 23, 12, 0, 0);
    expect(formatRelative(now - 5 * 60_000, now)).toBe("5 minutes ago");
    expect(formatRelative(now + 2 * 3_600_000, now)).toBe("in 2 hours");
    expect(formatRelative(now - 1000, now)).toBe("now");
    expect(formatRelative(now - 3 * 86_400_000, now)).toBe("3 days ago");
    expect(formatDateTime(now, "UTC")).toBe("Nov 23, 2026, 12:00:00 UTC");
    expect(formatDateTime(now, "Europe/Berlin")).toBe("Nov 23, 2026, 13:00:00 GMT+1");
    expect(formatDateTime(null)).toBe("—");
  });

  it("kept formatters answer by their own options: digits and style apart, every time zone in its own zone", () => {
    expect(formatPercent(0.12345, 2)).toBe("12.35%");
    expect(formatDecimal(0.12345, 2)).toBe("0.12");
    expect(formatPercent(0.12345, 0)).toBe("12%");
    expect(formatDecimal(1234.5678, 3)).toBe("1,234.568");
    expect(formatCount(1234.5678)).toBe("1,235");
    const now = Date.UTC(2026, 10, 23, 12, 0, 0);
    // More zones than the formatters kept (16): the ones past it are made per call and still right.
    for (let h = 1; h <= 11; h++) {
      expect(formatDateTime(now, `Etc/GMT-${h}`)).toBe(`Nov 23, 2026, ${String(12 + h).padStart(2, "0")}:00:00 GMT+${h}`);
      expect(formatDateTime(now, `Etc/GMT+${h}`)).toBe(`Nov 23, 2026, ${String(12 - h).padStart(2, "0")}:00:00 GMT-${h}`);
    }
    expect(formatDateTime(now, "UTC")).toBe("Nov 23, 2026, 12:00:00 UTC");
  });
});
