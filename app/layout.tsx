import type { Metadata } from "next";
import "./globals.css";

// Every page is rendered per request, so each gets the script nonce its Content-Security-Policy names (proxy.ts); a page prerendered at build time (the 404 page) would carry none and its scripts would be blocked.
export const dynamic = "force-dynamic";

export const metadata: Metadata = {
  title: "dualmind",
  description: "Local-first memory and governance console for AI agents",
  manifest: "/manifest.webmanifest",
  icons: {
    icon: [
      { url: "/icon.svg", type: "image/svg+xml" },
      { url: "/icons/icon-32.png", type: "image/png", sizes: "32x32" },
    ],
    apple: { url: "/apple-touch-icon.png", sizes: "180x180" },
  },
};

export default function RootLayout({ children }: { children: React.ReactNode }) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
