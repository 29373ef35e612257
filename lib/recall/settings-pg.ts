import type { PgStoreTx } from "../db/pg-store";
import { inCallerTx } from "../db/port";
import { reflectionSettingsInForce, type ReflectionSettings } from "./settings";

/** The settings in force, read in the caller's PostgreSQL transaction (the repository: ./settings.ts). */
export function getReflectionSettingsPg(tx: PgStoreTx): Promise<ReflectionSettings> {
  return inCallerTx(tx, reflectionSettingsInForce());
}
