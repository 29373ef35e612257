"use client";

import NextLink from "next/link";
import { useState, type ComponentProps } from "react";

/**
 * Every link of the dashboard. Next's own Link prefetches each link the moment it scrolls into view, and each
 * prefetch is a request the server renders (the dashboard layout and the page's loading state): a dashboard page
 * showing thirty links cost the server several times the work of the page itself, on every full load and again
 * when the prefetches went stale. This one prefetches a page when a person shows they may follow the link: the
 * pointer over it, keyboard focus on it, a finger on it. A pointer usually rests long enough for the prefetch to
 * land before the click; a tap or a quick click may fetch the page on the click instead.
 * `prefetch={false}` still means never; `prefetch` true or null says how much to prefetch once there is intent.
 */
export default function Link({ prefetch, onMouseEnter, onFocus, onTouchStart, ...props }: ComponentProps<typeof NextLink>) {
  const [intent, setIntent] = useState(false);
  return (
    <NextLink
      {...props}
      prefetch={prefetch === false || !intent ? false : (prefetch ?? null)}
      onMouseEnter={(e) => {
        setIntent(true);
        onMouseEnter?.(e);
      }}
      onFocus={(e) => {
        setIntent(true);
        onFocus?.(e);
      }}
      onTouchStart={(e) => {
        setIntent(true);
        onTouchStart?.(e);
      }}
    />
  );
}
