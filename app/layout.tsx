import type { Metadata } from "next";
import "./globals.css";

// Every page is rendered per request, so each gets the script nonce its Content-Security-Policy names (proxy.ts); a page prerendered at build time (the 404 page) would carry none and its scripts would be blocked.
export const dynamic = "force-dynamic";

export const metadata: Metadata = {
  title: "dualmind",
  description: "Local-first memory and governance console for AI agents",
};

export default function RootLayout({ children }: { children: React.ReactNode }) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
