import { getConfig } from "./config";
import { getGovernance, readOnlyParts } from "./db/connection";
import { ensureFirstAdmin, type FirstAdmin } from "./backend/users";
import { getAuthSecret } from "./auth/secret";
import { ensureCoreStore, ensureDefaultStore } from "./stores/stores";
import { stores, storesOnPostgres } from "./stores/backend";
import { registerEmbeddableKinds } from "./embeddable-kinds";
import { log } from "./log";
import { tightenDataDir } from "./private-fs";
import { assertSqliteDataDir, markPostgresDataDir } from "./db/deployment-marker";

/**
 * Idempotent start-up: register the embeddable kinds, validate config, close
 * DATA_DIR to other users, migrate governance.db, make sure the core store,
 * the `default` store (first run only, see ensureDefaultStore) and a first
 * admin exist. With DATABASE_URL all of that is in PostgreSQL: no local
 * ledger or store is created, and DATA_DIR is marked as a PostgreSQL
 * deployment's (a later start without DATABASE_URL refuses it). A generated admin password is printed once, on the
 * server console, and never stored in clear.
 *
 * The returned promise settles when the first admin exists: at once on
 * SQLite (everything above ran synchronously), after a round trip with
 * DATABASE_URL (users live in PostgreSQL). Entry points await it.
 */
export async function bootstrapApp(): Promise<void> {
  registerEmbeddableKinds();
  const config = getConfig();
  tightenDataDir(config.dataDir);
  if (storesOnPostgres()) {
    markPostgresDataDir();
    if ((await stores().ensureStartupStores()).createdDefault) log("info", "created the default store in PostgreSQL", { store: "default" });
  } else {
    assertSqliteDataDir();
    getGovernance();
    const readOnly = readOnlyParts({ names: true });
    if (readOnly.length > 0) log("warn", "starting with read-only data: reads are served, writes to these parts answer 503", { readOnly });
    ensureCoreStore();
    if (ensureDefaultStore()) log("info", "created the default store", { store: "default" });
  }
  getAuthSecret();
  reportFirstAdmin(await ensureFirstAdmin({ configuredPassword: config.adminPassword }));
}

function reportFirstAdmin(admin: FirstAdmin): void {
  if (admin.created) {
    if (admin.generatedPassword) {
      process.stderr.write(
        `\n  dualmind: created user "${admin.username}" with password: ${admin.generatedPassword}\n` +
          `  (shown once; change it with: npm run cli -- users reset-password ${admin.username})\n\n`,
      );
    } else {
      log("info", "created first admin from DUALMIND_ADMIN_PASSWORD", { username: admin.username });
    }
  }
}
