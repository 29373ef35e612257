import type { MetadataRoute } from "next";

/** The web app manifest (served at /manifest.webmanifest, public: see lib/http/dashboard-access.ts). */
export default function manifest(): MetadataRoute.Manifest {
  return {
    name: "dualmind",
    short_name: "dualmind",
    description: "Local-first memory and governance console for AI agents",
    start_url: "/",
    display: "standalone",
    background_color: "#f8fafc",
    theme_color: "#0f172a",
    icons: [
      { src: "/icon.svg", type: "image/svg+xml", sizes: "any" },
      { src: "/icons/icon-192.png", type: "image/png", sizes: "192x192" },
      { src: "/icons/icon-512.png", type: "image/png", sizes: "512x512" },
    ],
  };
}
