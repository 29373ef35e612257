import type { Metadata } from "next";
import "./globals.css";

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
