/**
 * Draw the app's PNG icons and favicon from public/icon.svg, offline, with
 * Debian's Chromium (scripts/chromium.ts). Run by hand after changing the SVG:
 *   npx tsx scripts/make-icons.ts
 * The outputs are committed; nothing runs this at build or start.
 */
import fs from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { chromiumPath } from "./chromium";

const ROOT = path.join(import.meta.dirname, "..", "public");
const SIZES: Record<string, number> = { "icons/icon-192.png": 192, "icons/icon-512.png": 512, "apple-touch-icon.png": 180, "icons/icon-32.png": 32 };

/** An .ico holding one PNG (valid since Windows Vista, read by every current browser). */
function icoFromPng(png: Buffer, size: number): Buffer {
  const header = Buffer.alloc(22);
  header.writeUInt16LE(0, 0); // reserved
  header.writeUInt16LE(1, 2); // type: icon
  header.writeUInt16LE(1, 4); // one image
  header.writeUInt8(size >= 256 ? 0 : size, 6);
  header.writeUInt8(size >= 256 ? 0 : size, 7);
  header.writeUInt8(0, 8); // no palette
  header.writeUInt8(0, 9);
  header.writeUInt16LE(1, 10); // colour planes
  header.writeUInt16LE(32, 12); // bits per pixel
  header.writeUInt32LE(png.length, 14);
  header.writeUInt32LE(22, 18); // image data offset
  return Buffer.concat([header, png]);
}

async function main(): Promise<void> {
  const executablePath = chromiumPath("full");
  const svg = fs.readFileSync(path.join(ROOT, "icon.svg"), "utf8");
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const page = await browser.newPage();
    for (const [file, size] of Object.entries(SIZES)) {
      await page.setViewportSize({ width: size, height: size });
      await page.setContent(`<html><body style="margin:0;background:transparent">${svg.replace("<svg ", `<svg width="${size}" height="${size}" `)}</body></html>`);
      const png = await page.locator("svg").screenshot({ omitBackground: true });
      fs.writeFileSync(path.join(ROOT, file), png);
      if (size === 32) fs.writeFileSync(path.join(ROOT, "favicon.ico"), icoFromPng(png, size));
      process.stdout.write(`${file}: ${size}×${size}, ${png.length} bytes\n`);
    }
  } finally {
    await browser.close();
  }
}

void main();
