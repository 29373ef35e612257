import { ComingSoon } from "@/components/coming-soon";

export default function SearchPage() {
  return (
    <ComingSoon title="Search">
      <p>Full-text, vector and hybrid search over a store&apos;s documents and memories, with filters and an explain view.</p>
    </ComingSoon>
  );
}
