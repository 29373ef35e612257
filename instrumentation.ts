export async function register() {
  if (process.env.NEXT_RUNTIME === "nodejs") {
    const { bootstrapApp } = await import("./lib/bootstrap");
    bootstrapApp();
    const { getConfig } = await import("./lib/config");
    if (getConfig().embed.workerInServer) {
      const { startEmbedWorker } = await import("./lib/embed/worker");
      void startEmbedWorker();
    }
    const { startMetricsLoop } = await import("./lib/metrics/loop");
    startMetricsLoop();
  }
}
