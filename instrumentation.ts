export async function register() {
  if (process.env.NEXT_RUNTIME === "nodejs") {
    // `next start` run directly (npm start checks first): an invalid setting stops the server with the variables named,
    // rather than a server that says it is ready and answers every request with a bare 500.
    const { getConfig } = await import("./lib/config");
    try {
      getConfig();
    } catch (e) {
      if (!(e instanceof Error && e.name === "ConfigError")) throw e;
      process.stderr.write(`dualmind: ${e.message}\n`);
      process.exit(1);
    }
    // TRACE answers 405 before Next sees it (Next cannot build a Request for it and would answer 500).
    const { refuseForbiddenMethods } = await import("./lib/http/refused-methods");
    refuseForbiddenMethods();
    const { bootstrapApp } = await import("./lib/bootstrap");
    await bootstrapApp();
    // A store whose vectors are another model's than the configured one: the log names both, their dimensions and what to do.
    const { reportModelMismatches } = await import("./lib/eval/model-check");
    void reportModelMismatches().catch(() => undefined);
    if (getConfig().embed.workerInServer) {
      const { startEmbedWorker } = await import("./lib/embed/worker");
      void startEmbedWorker({ mode: "in_server" });
      // With DATABASE_URL, stores in PostgreSQL have their own queue; every replica's worker claims from it.
      if (getConfig().databaseUrl) {
        const { startStoresEmbedWorkerPg } = await import("./lib/stores/engines/pg");
        void startStoresEmbedWorkerPg({ mode: "in_server" });
      }
    }
    // Reindex jobs a crash left running (here before a restart, or in a peer process) are taken over.
    const { startJobSweeper } = await import("./lib/index/jobs");
    startJobSweeper();
    // With DATABASE_URL the stores' jobs are in PostgreSQL: a replica that died mid-reindex leaves its job to the others.
    if (getConfig().databaseUrl) {
      const { startJobSweeperPg } = await import("./lib/stores/engines/pg");
      startJobSweeperPg();
    }
    // Word lists for broad queries on big stores, built and kept up between requests.
    const { startWordListUpkeep } = await import("./lib/index/word-list-upkeep");
    startWordListUpkeep();
    // Files edited in memory/ folders on disk (a git pull) reach the index within seconds (DUALMIND_MEMORY_WATCH).
    const { startMemoryWatch } = await import("./lib/index/watch");
    startMemoryWatch();
    // Self-recall after a reindex and every day (DUALMIND_EVALUATE_EVERY), paced to DUALMIND_EVALUATE_CPU_SHARE of a core.
    const { startSelfRecallScheduler } = await import("./lib/eval/self-recall");
    startSelfRecallScheduler();
    const { startMetricsLoop } = await import("./lib/metrics/loop");
    startMetricsLoop();
    // Per-agent search, recall and remember counts are merged into the ledger once a minute and at shutdown.
    const { startRetrievalCountFlush } = await import("./lib/governance/retrieval-counts");
    startRetrievalCountFlush();
    // Store status changes and failed reviews become health events (and webhook alerts).
    const { startStatusWatch } = await import("./lib/metrics/health");
    startStatusWatch();
  }
}
