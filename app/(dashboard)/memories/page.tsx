import { ComingSoon } from "@/components/coming-soon";

export default function MemoriesPage() {
  return (
    <ComingSoon title="Memories">
      <p>The category tree of a store&apos;s markdown memories, with tag, date and source filters and a safe markdown view.</p>
    </ComingSoon>
  );
}
