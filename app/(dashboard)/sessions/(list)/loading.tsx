import { LedgerLoading } from "@/components/ledger-loading";

export default function Loading() {
  return <LedgerLoading title="Sessions" />;
}
